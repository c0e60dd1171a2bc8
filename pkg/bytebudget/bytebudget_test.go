package bytebudget

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAdmits(t *testing.T) {
	for _, tc := range []struct {
		name          string
		budget        Budget
		before, after int64
		want          bool
	}{
		{"no budget", 0, 1 << 30, 2 << 30, true},
		{"within", 1000, 100, 900, true},
		{"up to the budget", 1000, 100, 1000, true},
		{"one byte past", 1000, 100, 1001, false},
		{"past it already, growing", 1000, 1200, 1201, false},
		{"past it already, the same", 1000, 1200, 1200, true},
		{"past it already, shrinking", 1000, 1200, 1100, true},
		{"shrinking to within", 1000, 1200, 900, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.budget.Admits(tc.before, tc.after); got != tc.want {
				t.Errorf("Budget(%d).Admits(%d, %d) = %v, want %v", tc.budget, tc.before, tc.after, got, tc.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	got := Budget(16<<20).Refusal("team-a", 16<<20-100, 16<<20+5000).Error()
	for _, want := range []string{"namespace team-a", "16777116 bytes (16.0 MiB)", "16782216 bytes",
		"past the 16777216 bytes (16.0 MiB)", "--max-namespaced-bytes-per-namespace=16Mi"} {
		if !strings.Contains(got, want) {
			t.Errorf("refusal %q does not say %q", got, want)
		}
	}
}

func TestUsage(t *testing.T) {
	// Objects a and b of namespace ns: a's injected part 1 is recorded, b's 2 is not (the
	// controller is behind); a also has an older revision (injected part 9).
	a := Object{Name: "ns.a", Bytes: 1000, Injected: 1, RevisionBytes: 400}
	b := Object{Name: "ns.b", Bytes: 2000, Injected: 2, RevisionBytes: 900}
	revisions := []Revision{
		{SidecarSet: "ns.a", Bytes: 410, Injected: 1},
		{SidecarSet: "ns.a", Bytes: 300, Injected: 9},
		{SidecarSet: "ns.b", Bytes: 800, Injected: 7},
	}
	use := Measure([]Object{a, b}, revisions)
	const before = 1000 + 2000 + 900 + 410 + 300 + 800
	if use.Bytes != before {
		t.Fatalf("Bytes = %d, want %d", use.Bytes, before)
	}
	for _, tc := range []struct {
		name  string
		write Object
		want  int64
	}{
		{"create", Object{Name: "ns.c", Bytes: 500, Injected: 3, RevisionBytes: 200}, before + 700},
		{"metadata of a, larger", Object{Name: "ns.a", Bytes: 1100, Injected: 1, RevisionBytes: 400}, before + 100},
		{"metadata of a, smaller", Object{Name: "ns.a", Bytes: 900, Injected: 1, RevisionBytes: 400}, before - 100},
		{"image of a: a revision to record", Object{Name: "ns.a", Bytes: 1000, Injected: 5, RevisionBytes: 400}, before + 400},
		{"a back to a recorded revision", Object{Name: "ns.a", Bytes: 990, Injected: 9, RevisionBytes: 390}, before - 10},
		{"b, its revision still to record", Object{Name: "ns.b", Bytes: 2000, Injected: 2, RevisionBytes: 900}, before},
		{"b, another image before the first is recorded", Object{Name: "ns.b", Bytes: 2000, Injected: 4, RevisionBytes: 900}, before},
		{"b back to its recorded revision", Object{Name: "ns.b", Bytes: 1900, Injected: 7, RevisionBytes: 800}, before - 1000},
		{"another namespace's revision of the same part does not count", Object{Name: "ns.c", Bytes: 500, Injected: 7, RevisionBytes: 200}, before + 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := use.After(tc.write); got != tc.want {
				t.Errorf("After = %d, want %d (%+d)", got, tc.want, got-use.Bytes)
			}
		})
	}

	t.Run("With an object the cache lacks", func(t *testing.T) {
		c := Object{Name: "ns.c", Bytes: 500, Injected: 3, RevisionBytes: 200}
		with := use.With(c)
		if with.Bytes != before+700 || !with.Has("ns.c") || use.Has("ns.c") {
			t.Errorf("With: Bytes %d (want %d), Has %v (want true), and the original Has %v (want false)",
				with.Bytes, before+700, with.Has("ns.c"), use.Has("ns.c"))
		}
		if got := with.After(Object{Name: "ns.c", Bytes: 400, Injected: 3, RevisionBytes: 200}); got != before+600 {
			t.Errorf("After shrinking c = %d, want %d", got, before+600)
		}
	})
}

func TestMeasureEmpty(t *testing.T) {
	use := Measure(nil, nil)
	if diff := cmp.Diff(int64(0), use.After(Object{Name: "ns.a"})); diff != "" {
		t.Errorf("an empty object in an empty namespace (-want +got):\n%s", diff)
	}
}
