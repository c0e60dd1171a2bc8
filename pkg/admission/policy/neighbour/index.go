package neighbour

import (
	"slices"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/selectoroverlap"
)

// Index narrows the SidecarSets that may share a pod with one (see Neighbours) to those worth
// testing. Every pod a SidecarSet selects carries the label its apps.RequiredLabel names, with one
// of its values when it lists some; two SidecarSets requiring one label to take values from
// disjoint lists select no common pod, and selectoroverlap.Intersect, which Neighbours applies,
// finds them disjoint. With thousands of SidecarSets each on its own value of one label (the
// manual's shape), a SidecarSet is tested against the few on its values, not against all.
// NamespacedSidecarSets of two namespaces select no common pod either: each namespace has its own
// label index, and cluster SidecarSets theirs.
type Index struct {
	sets []*v1alpha1.SidecarSet
	// parts are the label indexes by tenant namespace, "" for the cluster SidecarSets.
	parts map[string]*labelIndex
	// pods and namespaces are each SidecarSet's selectors, gathered for mayShare when first
	// tested (gathered[i]).
	pods, namespaces []selectoroverlap.Requirements
	gathered         []bool
	// seen[i] == pass when sets[i] was visited in the current pass.
	seen []uint32
	pass uint32
	out  []int // candidates' result
}

// labelIndex files SidecarSets by the label they require: byValue[k][v] are those requiring
// label k with v among its values, byKey[k] all of those requiring k with values; open are the
// others (no label required, or one that only has to exist): they are tested against every
// SidecarSet.
type labelIndex struct {
	byValue map[string]map[string][]int
	byKey   map[string][]int
	open    []int
}

// NewIndex files sets by the labels they require.
func NewIndex(sets []*v1alpha1.SidecarSet) *Index {
	x := &Index{sets: sets, parts: map[string]*labelIndex{}, seen: make([]uint32, len(sets)),
		pods: make([]selectoroverlap.Requirements, len(sets)), namespaces: make([]selectoroverlap.Requirements, len(sets)), gathered: make([]bool, len(sets))}
	for i, ss := range sets {
		ns := TenantNamespace(ss)
		part := x.parts[ns]
		if part == nil {
			part = &labelIndex{byValue: map[string]map[string][]int{}, byKey: map[string][]int{}}
			x.parts[ns] = part
		}
		part.add(i, ss)
	}
	return x
}

func (li *labelIndex) add(i int, ss *v1alpha1.SidecarSet) {
	k, values := apps.RequiredLabel(ss.Spec.Selector)
	if k == "" || values == nil {
		li.open = append(li.open, i)
		return
	}
	li.byKey[k] = append(li.byKey[k], i)
	if li.byValue[k] == nil {
		li.byValue[k] = map[string][]int{}
	}
	for _, v := range values {
		li.byValue[k][v] = append(li.byValue[k][v], i)
	}
}

// visit calls f with the lists of those that may share a pod with a SidecarSet requiring label k
// with values (k "" or values nil: every list).
func (li *labelIndex) visit(k string, values []string, f func([]int)) {
	f(li.open)
	for key, list := range li.byKey {
		if key != k || values == nil {
			f(list)
		}
	}
	if k != "" && values != nil {
		for _, v := range values {
			f(li.byValue[k][v])
		}
	}
}

// Candidates returns, in increasing order, the indexes of the SidecarSets that may share a pod
// with ss: a superset of those MayShare accepts, ss itself possibly among them. The slice is
// reused by the next call.
func (x *Index) Candidates(ss *v1alpha1.SidecarSet) []int {
	out := x.out[:0]
	defer func() { x.out = out }()
	k, values := apps.RequiredLabel(ss.Spec.Selector)
	x.pass++
	visit := func(list []int) {
		for _, i := range list {
			if x.seen[i] != x.pass {
				x.seen[i] = x.pass
				out = append(out, i)
			}
		}
	}
	ns := TenantNamespace(ss)
	for name, part := range x.parts {
		if ns == "" || name == "" || name == ns {
			part.visit(k, values, visit)
		}
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

// MayShare reports whether the SidecarSets at i and j of the indexed sets may both inject into one
// pod (mayShare).
func (x *Index) MayShare(i, j int) bool {
	if x.sets[i].Spec.InjectionStrategy.Paused || x.sets[j].Spec.InjectionStrategy.Paused {
		return false
	}
	x.gather(i)
	x.gather(j)
	return x.pods[i].Intersects(x.pods[j]) && x.namespaces[i].Intersects(x.namespaces[j])
}

func (x *Index) gather(i int) {
	if !x.gathered[i] {
		ss := x.sets[i]
		x.pods[i] = selectoroverlap.Gather(ss.Spec.Selector)
		x.namespaces[i] = selectoroverlap.Gather(apps.NamespaceSelector(ss.Spec.Namespace, ss.Spec.NamespaceSelector))
		x.gathered[i] = true
	}
}
