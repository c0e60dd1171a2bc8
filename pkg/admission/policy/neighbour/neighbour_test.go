package neighbour

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func selecting(name string, sel *metav1.LabelSelector, containers ...string) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{}
	ss.Name, ss.Spec.Selector = name, sel
	for _, c := range containers {
		ss.Spec.Containers = append(ss.Spec.Containers, v1alpha1.SidecarContainer{})
		ss.Spec.Containers[len(ss.Spec.Containers)-1].Name = c
	}
	return ss
}

func labels(k, v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
}

func exists(k string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: k, Operator: metav1.LabelSelectorOpExists}}}
}

// TestNeighbours: SidecarSets on disjoint values of a label are not neighbours, one accepting any
// value is everyone's on that label, and the index offers every neighbour as a candidate.
func TestNeighbours(t *testing.T) {
	sets := []*v1alpha1.SidecarSet{
		selecting("a", labels("app", "a")),
		selecting("a2", labels("app", "a")),
		selecting("any", exists("app")),
		selecting("b", labels("app", "b")),
		selecting("tier", labels("tier", "front")),
		selecting("ns.team", labels("app", "a")), // a NamespacedSidecarSet
	}
	want := map[string][]string{
		"a":       {"a2", "any", "tier", "ns.team"},
		"a2":      {"a", "any", "tier", "ns.team"},
		"any":     {"a", "a2", "b", "tier", "ns.team"},
		"b":       {"any", "tier"},
		"tier":    {"a", "a2", "any", "b", "ns.team"},
		"ns.team": {"a", "a2", "any", "tier"},
	}
	x := NewIndex(sets)
	for i, ss := range sets {
		var got []string
		for _, o := range Neighbours(ss, sets) {
			got = append(got, o.Name)
		}
		if diff := cmp.Diff(want[ss.Name], got); diff != "" {
			t.Errorf("Neighbours(%s) (-want +got):\n%s", ss.Name, diff)
		}
		candidates := map[int]bool{}
		x.Candidates(i, func(j int) bool {
			if candidates[j] {
				t.Errorf("the index offers %s twice to %s", sets[j].Name, ss.Name)
			}
			candidates[j] = true
			return true
		})
		for j, o := range sets {
			if j != i && x.MayShare(i, j) != (mayShare(ss, o)) {
				t.Errorf("Index.MayShare(%s, %s) differs from mayShare", ss.Name, o.Name)
			}
			if j != i && mayShare(ss, o) && !candidates[j] {
				t.Errorf("the index does not offer %s, a neighbour of %s", o.Name, ss.Name)
			}
		}
	}
}

// TestScopeOf: a cluster SidecarSet meets its cluster neighbours everywhere and a tenant's in the
// tenant's namespace; a namespace whose names it could not tell apart is handed off.
func TestScopeOf(t *testing.T) {
	mesh := selecting("mesh", exists("app"), "proxy")
	log := selecting("log", exists("app"), "log")
	tenantA := selecting("team-a.audit", exists("app"), "audit")
	early := selecting("a-first", exists("app"), "shared") // sorts before mesh
	late := selecting("team-b.z", exists("app"), "shared") // sorts after mesh, same name
	for _, tc := range []struct {
		name string
		ss   *v1alpha1.SidecarSet
		near []*v1alpha1.SidecarSet
		want Scope
	}{
		{"cluster", mesh, []*v1alpha1.SidecarSet{log, tenantA},
			Scope{Shared: []*v1alpha1.SidecarSet{log}, Tenants: map[string][]*v1alpha1.SidecarSet{"team-a": {tenantA}}}},
		{"ambiguous tenant handed off", mesh, []*v1alpha1.SidecarSet{early, late},
			Scope{Shared: []*v1alpha1.SidecarSet{early}, Tenants: map[string][]*v1alpha1.SidecarSet{}, Handoff: []string{"team-b"}}},
		{"a tenant's neighbours are all shared", tenantA, []*v1alpha1.SidecarSet{mesh, late},
			Scope{Shared: []*v1alpha1.SidecarSet{mesh, late}, Tenants: map[string][]*v1alpha1.SidecarSet{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ScopeOf(tc.ss, tc.near)); diff != "" {
				t.Errorf("ScopeOf (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCandidatesOpenOnly: once the caller asks for open SidecarSets only, the index offers, each
// once, the open candidates it has not offered yet, and leaves out those no longer open.
func TestCandidatesOpenOnly(t *testing.T) {
	sets := []*v1alpha1.SidecarSet{
		selecting("any", exists("app")),
		selecting("a", labels("app", "a")),
		selecting("b", labels("app", "b")),
		selecting("c", labels("app", "c")),
		selecting("tier", labels("tier", "front")),
		selecting("zone", labels("zone", "x")),
	}
	for _, tc := range []struct {
		name   string
		open   []int
		closed []int // set open, then not
	}{
		{"none open", nil, nil},
		{"all open", []int{0, 1, 2, 3, 4, 5}, nil},
		{"some open", []int{2, 5}, nil},
		{"closed again", []int{2, 3, 5}, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := NewIndex(sets)
			for _, j := range tc.open {
				x.SetOpen(j, true)
			}
			for _, j := range tc.closed {
				x.SetOpen(j, false)
			}
			offered := map[int]int{}
			var order []int
			x.Candidates(0, func(j int) bool {
				offered[j]++
				order = append(order, j)
				return false
			})
			if len(order) == 0 {
				t.Fatal("nothing offered")
			}
			for j, n := range offered {
				if n > 1 {
					t.Errorf("%s offered %d times", sets[j].Name, n)
				}
			}
			// Every SidecarSet is a candidate of "any": after the first, the open ones but it.
			var want []int
			for _, j := range tc.open {
				if j != order[0] && !slices.Contains(tc.closed, j) {
					want = append(want, j)
				}
			}
			rest := slices.Sorted(slices.Values(order[1:]))
			if diff := cmp.Diff(want, rest, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("offered after the caller asked for open ones only (-want +got):\n%s", diff)
			}
		})
	}
}
