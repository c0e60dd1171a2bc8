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
	// in are the lists each SidecarSet is filed in; open[i] is set by SetOpen.
	in   [][]*list
	open []bool
	// seen[i] == pass when sets[i] was visited in the current pass.
	seen []uint32
	pass uint32
}

// list is the SidecarSets filed under one label (all, increasing), and those of them set open
// (SetOpen), in the order they were set; those no longer open leave it when it is next read.
type list struct {
	all, open []int
}

// labelIndex files SidecarSets by the label they require: byValue[k][v] are those requiring
// label k with v among its values, byKey[k] all of those requiring k with values; others are the
// others (no label required, or one that only has to exist): they are tested against every
// SidecarSet.
type labelIndex struct {
	byValue map[string]map[string]*list
	byKey   map[string]*list
	others  *list
}

// NewIndex files sets by the labels they require.
func NewIndex(sets []*v1alpha1.SidecarSet) *Index {
	x := &Index{sets: sets, parts: map[string]*labelIndex{}, seen: make([]uint32, len(sets)),
		pods: make([]selectoroverlap.Requirements, len(sets)), namespaces: make([]selectoroverlap.Requirements, len(sets)),
		gathered: make([]bool, len(sets)), in: make([][]*list, len(sets)), open: make([]bool, len(sets))}
	for i, ss := range sets {
		ns := TenantNamespace(ss)
		part := x.parts[ns]
		if part == nil {
			part = &labelIndex{byValue: map[string]map[string]*list{}, byKey: map[string]*list{}, others: &list{}}
			x.parts[ns] = part
		}
		x.in[i] = part.add(i, ss)
	}
	return x
}

// add files ss, at i, and returns the lists it is in.
func (li *labelIndex) add(i int, ss *v1alpha1.SidecarSet) []*list {
	k, values := apps.RequiredLabel(ss.Spec.Selector)
	if k == "" || values == nil {
		li.others.all = append(li.others.all, i)
		return []*list{li.others}
	}
	if li.byKey[k] == nil {
		li.byKey[k], li.byValue[k] = &list{}, map[string]*list{}
	}
	in := []*list{li.byKey[k]}
	for _, v := range values {
		l := li.byValue[k][v]
		if l == nil {
			l = &list{}
			li.byValue[k][v] = l
		}
		l.all = append(l.all, i)
		in = append(in, l)
	}
	li.byKey[k].all = append(li.byKey[k].all, i)
	return in
}

// visit calls f with the lists of those that may share a pod with a SidecarSet requiring label k
// with values (k "" or values nil: every list).
func (li *labelIndex) visit(k string, values []string, f func(*list)) {
	f(li.others)
	for key, l := range li.byKey {
		if key != k || values == nil {
			f(l)
		}
	}
	if k != "" && values != nil {
		for _, v := range values {
			if l := li.byValue[k][v]; l != nil {
				f(l)
			}
		}
	}
}

// SetOpen records whether the SidecarSet at i is still to be offered to Candidates once its
// caller has asked for the open ones only (a SidecarSet that is still to learn its neighbours).
func (x *Index) SetOpen(i int, open bool) {
	if open && !x.open[i] {
		for _, l := range x.in[i] {
			l.open = append(l.open, i)
		}
	}
	x.open[i] = open
}

// Candidates calls f, once each and in no particular order, with the index of each SidecarSet
// that may share a pod with sets[i]: a superset of those MayShare accepts, i itself possibly among
// them. Once f returns false, only the open ones (SetOpen) are offered. A SidecarSet that shares
// pods with most others (a common label, many keys) learns of a few of them, then of the few still
// open: entering every SidecarSet of such a shape tests far fewer than every pair.
func (x *Index) Candidates(i int, f func(j int) bool) {
	ss := x.sets[i]
	k, values := apps.RequiredLabel(ss.Spec.Selector)
	x.pass++
	all := true
	offer := func(j int) {
		if x.seen[j] != x.pass {
			x.seen[j] = x.pass
			all = f(j) && all
		}
	}
	x.lists(ss, k, values, func(l *list) {
		if !all {
			x.offerOpen(l, offer)
			return
		}
		for _, j := range l.all {
			if offer(j); !all {
				x.offerOpen(l, offer)
				return
			}
		}
	})
}

// offerOpen offers the open SidecarSets of l, and leaves out of l.open those no longer open.
func (x *Index) offerOpen(l *list, offer func(int)) {
	l.open = slices.DeleteFunc(l.open, func(j int) bool { return !x.open[j] })
	for _, j := range l.open {
		offer(j)
	}
}

// lists calls f with the lists of the parts where ss may meet others.
func (x *Index) lists(ss *v1alpha1.SidecarSet, k string, values []string, f func(*list)) {
	ns := TenantNamespace(ss)
	for name, part := range x.parts {
		if ns == "" || name == "" || name == ns {
			part.visit(k, values, f)
		}
	}
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
