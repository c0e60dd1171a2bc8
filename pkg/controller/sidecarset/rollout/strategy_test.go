package rollout

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolvePartition(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    *intstr.IntOrString
		total int32
		want  int32
	}{
		{"nil", nil, 10, 0},
		{"int", intOrStr("3"), 10, 3},
		{"int zero", intOrStr("0"), 10, 0},
		{"int above total is clamped", intOrStr("15"), 10, 10},
		{"negative int is clamped", intOrStr("-2"), 10, 0},
		{"int equal to total", intOrStr("10"), 10, 10},
		{"int of no pods", intOrStr("3"), 0, 0},
		{"0%", intOrStr("0%"), 10, 0},
		{"30% of 10", intOrStr("30%"), 10, 3},
		{"25% of 10 rounds up", intOrStr("25%"), 10, 3},
		{"1% of 10 rounds up", intOrStr("1%"), 10, 1},
		{"50% of 7 rounds up", intOrStr("50%"), 7, 4},
		{"100% of 10", intOrStr("100%"), 10, 10},
		{"100% of 1", intOrStr("100%"), 1, 1},
		{"99% of 10 leaves one to upgrade", intOrStr("99%"), 10, 9},
		{"91% of 10 leaves one to upgrade", intOrStr("91%"), 10, 9},
		{"99% of 1 (a single pod is kept)", intOrStr("99%"), 1, 1},
		{"99% of 2", intOrStr("99%"), 2, 1},
		{"99.5% as a float", intOrStr("99.5%"), 1000, 995},
		{"150% clamps to total (the total-1 rule needs exactly total)", intOrStr("150%"), 10, 10},
		{"percent of no pods", intOrStr("50%"), 0, 0},
		{"huge percent keeps every pod", intOrStr("99999999999%"), 10, 10},
		{"huge percent of many pods", intOrStr("2147483648%"), 10000, 10000},
		{"NaN percent", intOrStr("NaN%"), 10, 0},
		{"malformed percent", intOrStr("x%"), 10, 0},
		{"string without percent", &intstr.IntOrString{Type: intstr.String, StrVal: "5"}, 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolvePartition(tc.in, tc.total); got != tc.want {
				t.Errorf("ResolvePartition(%v, %d) = %d, want %d", tc.in, tc.total, got, tc.want)
			}
		})
	}
}

func TestResolveMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    *intstr.IntOrString
		total int32
		want  int32
	}{
		{"nil defaults to 1", nil, 10, 1},
		{"nil of no pods", nil, 0, 1},
		{"int", intOrStr("3"), 10, 3},
		{"int zero blocks", intOrStr("0"), 10, 0},
		{"int above total is kept", intOrStr("50"), 10, 50},
		{"negative int", intOrStr("-1"), 10, 0},
		{"0%", intOrStr("0%"), 10, 0},
		{"1% of 10 rounds up to 1", intOrStr("1%"), 10, 1},
		{"20% of 10", intOrStr("20%"), 10, 2},
		{"30% of 10", intOrStr("30%"), 10, 3},
		{"25% of 10 rounds up", intOrStr("25%"), 10, 3},
		{"100% of 10", intOrStr("100%"), 10, 10},
		{"99% of 10", intOrStr("99%"), 10, 10},
		{"99% of 1", intOrStr("99%"), 1, 1},
		{"10% of 401", intOrStr("10%"), 401, 41},
		{"percent of no pods", intOrStr("50%"), 0, 0},
		{"huge percent does not wrap around", intOrStr("99999999999%"), 10, math.MaxInt32},
		{"NaN percent", intOrStr("NaN%"), 10, 0},
		{"malformed percent defaults to 1", intOrStr("a%"), 10, 1},
		{"negative percent", intOrStr("-10%"), 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolveMaxUnavailable(tc.in, tc.total); got != tc.want {
				t.Errorf("ResolveMaxUnavailable(%v, %d) = %d, want %d", tc.in, tc.total, got, tc.want)
			}
		})
	}
}
