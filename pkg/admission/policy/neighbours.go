package policy

import (
	"slices"
	"strings"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/selectoroverlap"
)

// shareIndex narrows the SidecarSets that may share a pod with one (mayShare) to those worth
// testing. Every pod a SidecarSet selects carries the label its apps.RequiredLabel names, with one
// of its values when it lists some; two SidecarSets requiring one label to take values from
// disjoint lists select no common pod, and selectoroverlap.Intersect, which mayShare applies,
// finds them disjoint. With thousands of SidecarSets each on its own value of one label (the
// manual's shape), a SidecarSet is tested against the few on its values, not against all.
type shareIndex struct {
	sets []*v1alpha1.SidecarSet
	// byValue[k][v] are the SidecarSets requiring label k with v among its values, byKey[k] all
	// of those requiring k with values; open are the others (no label required, or one that
	// only has to exist): they are tested against every SidecarSet.
	byValue map[string]map[string][]int
	byKey   map[string][]int
	open    []int
	// pods and namespaces are each SidecarSet's selectors, gathered for mayShare when first
	// tested (gathered[i]).
	pods, namespaces []selectoroverlap.Requirements
	gathered         []bool
	// seen[i] == pass when sets[i] was visited in the current pass.
	seen []uint32
	pass uint32
	out  []int // candidates' result
}

func newShareIndex(sets []*v1alpha1.SidecarSet) *shareIndex {
	x := &shareIndex{sets: sets, byValue: map[string]map[string][]int{}, byKey: map[string][]int{}, seen: make([]uint32, len(sets)),
		pods: make([]selectoroverlap.Requirements, len(sets)), namespaces: make([]selectoroverlap.Requirements, len(sets)), gathered: make([]bool, len(sets))}
	for i, ss := range sets {
		k, values := apps.RequiredLabel(ss.Spec.Selector)
		if k == "" || values == nil {
			x.open = append(x.open, i)
			continue
		}
		x.byKey[k] = append(x.byKey[k], i)
		if x.byValue[k] == nil {
			x.byValue[k] = map[string][]int{}
		}
		for _, v := range values {
			x.byValue[k][v] = append(x.byValue[k][v], i)
		}
	}
	return x
}

// candidates returns, in increasing order, the indexes of the SidecarSets that may share a pod
// with ss: a superset of those mayShare accepts, ss itself possibly among them. The slice is
// reused by the next call.
func (x *shareIndex) candidates(ss *v1alpha1.SidecarSet) []int {
	out := x.out[:0]
	defer func() { x.out = out }()
	k, values := apps.RequiredLabel(ss.Spec.Selector)
	if k == "" || values == nil {
		for i := range x.sets {
			out = append(out, i)
		}
		return out
	}
	x.pass++
	visit := func(list []int) {
		for _, i := range list {
			if x.seen[i] != x.pass {
				x.seen[i] = x.pass
				out = append(out, i)
			}
		}
	}
	visit(x.open)
	for key, list := range x.byKey {
		if key != k {
			visit(list)
		}
	}
	for _, v := range values {
		visit(x.byValue[k][v])
	}
	if len(out) < len(x.sets)/16 {
		slices.Sort(out)
		return out
	}
	// Most of them (a common label and many keys): reading the marks in order beats sorting.
	out = out[:0]
	for i, pass := range x.seen {
		if pass == x.pass {
			out = append(out, i)
		}
	}
	return out
}

// mayShare is mayShare(x.sets[i], x.sets[j]).
func (x *shareIndex) mayShare(i, j int) bool {
	if x.sets[i].Spec.InjectionStrategy.Paused || x.sets[j].Spec.InjectionStrategy.Paused {
		return false
	}
	x.gather(i)
	x.gather(j)
	return x.pods[i].Intersects(x.pods[j]) && x.namespaces[i].Intersects(x.namespaces[j])
}

func (x *shareIndex) gather(i int) {
	if !x.gathered[i] {
		ss := x.sets[i]
		x.pods[i] = selectoroverlap.Gather(ss.Spec.Selector)
		x.namespaces[i] = selectoroverlap.Gather(apps.NamespaceSelector(ss.Spec.Namespace, ss.Spec.NamespaceSelector))
		x.gathered[i] = true
	}
}

// withNeighbour returns list (sorted by name) with ss, inserted in place: neighbour lists are read
// only during the plan that asked for them.
func withNeighbour(list []*v1alpha1.SidecarSet, ss *v1alpha1.SidecarSet) []*v1alpha1.SidecarSet {
	i, found := slices.BinarySearchFunc(list, ss.Name, byName)
	if found {
		return list
	}
	return slices.Insert(list, i, ss)
}

// withoutNeighbour returns list (sorted by name) without the SidecarSet named name, removed in
// place.
func withoutNeighbour(list []*v1alpha1.SidecarSet, name string) []*v1alpha1.SidecarSet {
	i, found := slices.BinarySearchFunc(list, name, byName)
	if !found {
		return list
	}
	return slices.Delete(list, i, i+1)
}

// replaceNeighbour puts ss in list (sorted by name) in place of the SidecarSet of its name.
func replaceNeighbour(list []*v1alpha1.SidecarSet, ss *v1alpha1.SidecarSet) {
	if i, found := slices.BinarySearchFunc(list, ss.Name, byName); found {
		list[i] = ss
	}
}

func byName(ss *v1alpha1.SidecarSet, name string) int { return strings.Compare(ss.Name, name) }
