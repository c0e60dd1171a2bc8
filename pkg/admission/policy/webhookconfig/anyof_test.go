package webhookconfig

import (
	"fmt"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// TestAnyOfCEL: the match condition term is true exactly for the listed values, short lists and
// long ones (a string literal) alike, the empty label value included; a value with a comma, which
// no valid label value or container name has, may match a long list (a match condition may be
// true for more pods, never for fewer).
func TestAnyOfCEL(t *testing.T) {
	long := []string{""}
	for i := 0; i < 20; i++ {
		long = append(long, fmt.Sprintf("other-%d", i))
	}
	env, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Env(environment.StoredExpressions)
	if err != nil {
		t.Fatal(err)
	}
	env, err = env.Extend(cel.Variable("x", cel.StringType))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		values []string
		x      string
		want   bool
	}{
		{"short, listed", []string{"a", "b"}, "b", true},
		{"short, not listed", []string{"a", "b"}, "c", false},
		{"short, prefix of a value", []string{"ab"}, "a", false},
		{"long, first", long, "other-0", true},
		{"long, last", long, "other-19", true},
		{"long, empty value listed", long, "", true},
		{"long, prefix of a value", long, "other-1", true},
		{"long, value's prefix only", long, "other", false},
		{"long, suffix of a value", long, "her-19", false},
		{"long, not listed", long, "other-20", false},
		{"long, empty value not listed", long[1:], "", false},
		{"long, two values joined by a comma (an invalid value: may match)", long, "other-1,other-2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ast, iss := env.Compile(anyOfCEL("x", tc.values))
			if iss.Err() != nil {
				t.Fatal(iss.Err())
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			out, _, err := prg.Eval(map[string]any{"x": tc.x})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Value().(bool); got != tc.want {
				t.Errorf("%q of %d values: %v, want %v", tc.x, len(tc.values), got, tc.want)
			}
		})
	}
}
