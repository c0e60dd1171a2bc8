package webhookconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
)

// TestFitTerms: each namespace's term keeps its share of the condition, and what one namespace
// needs never changes another's term (the probe of a namespace editor growing its own needs to
// send other namespaces' pods to the server).
func TestFitTerms(t *testing.T) {
	term := func(ns string, size int) string {
		t := "(request.namespace == " + celpatch.Quote(ns) + " && ("
		return t + strings.Repeat("x", max(0, size-len(t)-2)) + "))"
	}
	whole := func(ns string) string { return "(request.namespace == " + celpatch.Quote(ns) + ")" }
	fit := func(sizes map[string]int) map[string]string {
		namespaces := slices.Sorted(maps.Keys(sizes))
		terms := make([]string, len(namespaces))
		for i, ns := range namespaces {
			terms[i] = term(ns, sizes[ns])
		}
		fitTerms(namespaces, terms)
		out := map[string]string{}
		for i, ns := range namespaces {
			out[ns] = terms[i]
		}
		return out
	}
	crowd := func(n, size int, more map[string]int) map[string]int {
		out := map[string]int{}
		for i := range n {
			out[fmt.Sprintf("crowd-%02d", i)] = size
		}
		for ns, s := range more {
			out[ns] = s
		}
		return out
	}
	// 25 namespaces: a share of (90,000 - 24 separators) / 25 = 3,596 characters each.
	for _, tc := range []struct {
		name string
		in   map[string]int
		want map[string]string // the namespaces whose term becomes the namespace alone: "whole"
	}{
		{"few namespaces keep their terms", map[string]int{"a": 3_900, "b": 100}, map[string]string{"a": "", "b": ""}},
		{"over its share: the namespace alone", crowd(23, 3_850, map[string]int{"quiet": 150, "noisy": 150}),
			map[string]string{"crowd-00": "whole", "crowd-22": "whole"}},
		{"under its share: kept", crowd(23, 3_500, map[string]int{"quiet": 150, "noisy": 3_596}), map[string]string{"noisy": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fit(tc.in)
			for ns, w := range tc.want {
				if w == "whole" && got[ns] != whole(ns) {
					t.Errorf("%s: term of %d characters kept, want the namespace alone", ns, len(got[ns]))
				}
				if w == "" && got[ns] != term(ns, tc.in[ns]) {
					t.Errorf("%s: term %q, want it kept", ns, got[ns])
				}
			}
		})
	}
	small := fit(crowd(23, 3_850, map[string]int{"quiet": 150, "noisy": 150}))
	large := fit(crowd(23, 3_850, map[string]int{"quiet": 150, "noisy": 3_990}))
	for ns, term := range small {
		if ns != "noisy" && large[ns] != term {
			t.Errorf("%s: its term changed when noisy's needs grew (%d characters, then %d)", ns, len(term), len(large[ns]))
		}
	}
}
