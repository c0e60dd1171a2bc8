package policy

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestAllNeighbours: the share index leaves out no pair mayShare accepts. allNeighbours equals
// testing every pair (Neighbours), on each benchmark shape mixed with selectors the index
// cannot narrow or narrows by value lists (Exists, In of several values, NotIn, none, paused).
func TestAllNeighbours(t *testing.T) {
	sel := func(labels map[string]string, reqs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: reqs}
	}
	req := func(k string, op metav1.LabelSelectorOperator, vs ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: op, Values: vs}
	}
	extra := []*metav1.LabelSelector{
		sel(nil, req("bench", metav1.LabelSelectorOpExists)),
		sel(nil, req("bench", metav1.LabelSelectorOpIn, "other-7", "other-9", "five")),
		sel(nil, req("bench", metav1.LabelSelectorOpNotIn, "five")),
		sel(map[string]string{"bench": "other-12"}, req("tier", metav1.LabelSelectorOpIn, "web")),
		sel(map[string]string{"tier": "web"}),
		sel(nil, req("app", metav1.LabelSelectorOpIn, "other-11", "other-21")),
		nil,
	}
	for _, shape := range policytest.Shapes {
		t.Run(shape, func(t *testing.T) {
			sets := policytest.BenchSidecarSets(shape, 300)
			for i, s := range extra {
				ss := sets[10*i+3].DeepCopy()
				ss.Name = fmt.Sprintf("extra-%d", i)
				ss.Spec.Selector = s
				sets = append(sets, ss)
			}
			sets[20].Spec.InjectionStrategy.Paused = true
			slices.SortFunc(sets, func(a, b *v1alpha1.SidecarSet) int { return byName(a, b.Name) })
			got := allNeighbours(sets)
			pairs := 0
			for i, ss := range sets {
				want := Neighbours(ss, sets)
				pairs += len(want)
				if !slices.Equal(setNames(got[i]), setNames(want)) {
					t.Errorf("%s: neighbours %v, want %v", ss.Name, setNames(got[i]), setNames(want))
				}
			}
			if pairs == 0 {
				t.Fatal("no SidecarSets share a pod: the test checks nothing")
			}
		})
	}
}

func setNames(list []*v1alpha1.SidecarSet) []string {
	out := []string{}
	for _, ss := range list {
		out = append(out, ss.Name)
	}
	return out
}
