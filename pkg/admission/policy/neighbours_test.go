package policy

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestNeighbours: the memo's neighbour lists equal testing every pair (Neighbours), but for a
// crowded SidecarSet (a cluster one sharing pods with more than neighbour.MaxNeighbours cluster ones), whose
// list holds neighbour.MaxNeighbours+1 of its cluster neighbours. Checked from nothing and after each write
// of a sequence (creates, deletes that leave crowded SidecarSets below the limit, selector and
// version changes), on each benchmark shape mixed with selectors the share index cannot narrow or
// narrows by value lists (Exists, In of several values, NotIn, none, paused) and with
// NamespacedSidecarSets (never crowded: what shadows them is read from all their neighbours).
func TestNeighbours(t *testing.T) {
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
			rv := 0
			stored := func(ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
				rv++
				ss.UID, ss.ResourceVersion, ss.Generation = types.UID("uid-"+ss.Name), fmt.Sprint(rv), int64(rv)
				return ss
			}
			all := policytest.BenchSidecarSets(shape, 300)
			for i, s := range extra {
				ss := all[10*i+3].DeepCopy()
				ss.Name = fmt.Sprintf("extra-%d", i)
				ss.Spec.Selector = s
				all = append(all, ss)
			}
			for i := range 6 {
				n := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("tenant-%d", i), Namespace: fmt.Sprintf("ns-%d", i%2)},
					Spec: all[40+i].Spec}
				all = append(all, n.AsSidecarSet())
			}
			all[20].Spec.InjectionStrategy.Paused = true
			for _, ss := range all {
				stored(ss)
			}
			mm := &Memo{}
			check := func(step string, sets []*v1alpha1.SidecarSet) {
				t.Helper()
				sets = slices.Clone(sets)
				slices.SortFunc(sets, func(a, b *v1alpha1.SidecarSet) int { return byName(a, b.Name) })
				checkNeighbours(t, step, sets, mm.neighbours(sets))
			}
			sets := all[:250]
			check("from nothing", sets)
			check("the rest created", all)
			// Deleting most of the others leaves the crowded SidecarSets with fewer neighbours.
			sets = slices.Concat(all[:5], all[300:])
			check("most deleted", sets)
			sets = slices.Concat(all[:60], all[300:])
			check("some created again", sets)
			moved := all[7].DeepCopy()
			moved.Spec.Selector = sel(nil, req("team", metav1.LabelSelectorOpExists))
			sets[7] = stored(moved)
			check("a selector changed", sets)
			renamed := all[45].DeepCopy()
			renamed.Spec.Containers[0].Name = "renamed"
			sets[45] = stored(renamed)
			check("a version changed", sets)
			check("nothing changed", sets)
		})
	}
}

// checkNeighbours compares near, the memo's lists of sets, with testing every pair.
func checkNeighbours(t *testing.T, step string, sets []*v1alpha1.SidecarSet, near [][]*v1alpha1.SidecarSet) {
	t.Helper()
	pairs, crowded := 0, 0
	for i, ss := range sets {
		want := neighbour.Neighbours(ss, sets)
		pairs += len(want)
		got := near[i]
		if clusters := slices.DeleteFunc(slices.Clone(want), func(o *v1alpha1.SidecarSet) bool { return neighbour.TenantNamespace(o) != "" }); neighbour.TenantNamespace(ss) == "" && len(clusters) > neighbour.MaxNeighbours {
			crowded++
			want = clusters
			if len(got) != neighbour.MaxNeighbours+1 {
				t.Errorf("%s: %s is crowded (%d cluster neighbours): %d neighbours kept, want %d", step, ss.Name, len(clusters), len(got), neighbour.MaxNeighbours+1)
			}
			got = slices.DeleteFunc(slices.Clone(want), func(o *v1alpha1.SidecarSet) bool {
				return !slices.ContainsFunc(got, func(g *v1alpha1.SidecarSet) bool { return g.Name == o.Name })
			})
			if len(got) != len(near[i]) || !slices.IsSortedFunc(near[i], func(a, b *v1alpha1.SidecarSet) int { return byName(a, b.Name) }) {
				t.Errorf("%s: %s: kept %v, not %d sorted cluster neighbours among %v", step, ss.Name, setNames(near[i]), len(near[i]), setNames(want))
			}
			want = got
			got = near[i]
		}
		if !slices.Equal(setNames(got), setNames(want)) {
			t.Errorf("%s: %s: neighbours %v, want %v", step, ss.Name, setNames(got), setNames(want))
			continue
		}
		for k, o := range got {
			if version(o) != version(want[k]) {
				t.Errorf("%s: %s: neighbour %s is an older version", step, ss.Name, o.Name)
			}
		}
	}
	if pairs == 0 {
		t.Fatalf("%s: no SidecarSets share a pod: the test checks nothing", step)
	}
	t.Logf("%s: %d SidecarSets, %d pairs, %d crowded", step, len(sets), pairs/2, crowded)
}

func setNames(list []*v1alpha1.SidecarSet) []string {
	out := []string{}
	for _, ss := range list {
		out = append(out, ss.Name)
	}
	return out
}
