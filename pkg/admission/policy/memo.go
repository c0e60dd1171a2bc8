package policy

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Memo keeps, between plans, what PlanPolicies computed from SidecarSets that have not changed
// since: the neighbours of each SidecarSet (pairs of selectors tested again only for the
// SidecarSets a write changed), each member's compiled part, and each group's objects. With it a
// plan after one write of 1,000 stored SidecarSets compiles only what that write touches; the plan
// is the same with or without it. A Memo is not safe for concurrent use; the zero value is empty.
type Memo struct {
	versions map[string]versionEntry // by SidecarSet name
	near     map[string]*nearEntry
	members  map[string]memberEntry // by SidecarSet name
	groups   map[string]groupEntry  // by policy name
}

type versionEntry struct {
	resourceVersion string
	version         string // see version
	digest          string // of version
	shape           string // see shape
}

// versionOf is version(ss) and its digest, computed again only when ss's resourceVersion changes.
func (mm *Memo) versionOf(ss *v1alpha1.SidecarSet) versionEntry {
	if e, ok := mm.versions[ss.Name]; ok && ss.ResourceVersion != "" && e.resourceVersion == ss.ResourceVersion {
		return e
	}
	e := versionEntry{resourceVersion: ss.ResourceVersion, version: version(ss)}
	if e.version != "" {
		sum := sha256.Sum256([]byte(e.version))
		e.digest = string(sum[:16])
		e.shape = shape(ss)
	}
	if mm.versions == nil {
		mm.versions = map[string]versionEntry{}
	}
	mm.versions[ss.Name] = e
	return e
}

type nearEntry struct {
	shape, version string
	ss             *v1alpha1.SidecarSet
	// list is the neighbours sorted by name, changed in place (a plan reads the lists it gets
	// only until it returns); for a crowded SidecarSet, neighbour.MaxNeighbours+1 of its cluster neighbours.
	list []*v1alpha1.SidecarSet
	// clusters counts the cluster SidecarSets in list.
	clusters int
	// crowded: a cluster SidecarSet that may share pods with more cluster SidecarSets than a
	// policy places sidecars among. Its compilation reads nothing else of them (classify,
	// manyShared), so they are not kept: on a common-label shape nearly every SidecarSet may
	// share pods with nearly every other, and keeping them all took minutes and gigabytes at 10,000.
	// A SidecarSet asking for the policy path is never crowded: its policy names them all.
	crowded bool
	// digest is listDigest(list), "" until computed: every change of list clears it.
	digest string
}

type memberEntry struct {
	key    string
	stamp  time.Time // the member's hash entries carry it
	result Result
	member *celpatch.Member
}

type groupEntry struct {
	key     string
	policy  *admissionregistrationv1.MutatingAdmissionPolicy
	binding *admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// version identifies what compiling ss reads of it, "" when unknown (an object never stored: not
// memoized). A stored spec change bumps the generation; the hashes, the canary annotations and the
// latest revision are read too.
func version(ss *v1alpha1.SidecarSet) string {
	if ss.ResourceVersion == "" || ss.UID == "" {
		return ""
	}
	a := ss.Annotations
	return strings.Join([]string{string(ss.UID), strconv.FormatInt(ss.Generation, 10), ss.Status.LatestRevision,
		a[sidecar.HashAnnotation], a[sidecar.HashWithoutImageAnnotation], a[apps.SidecarSetCanaryAnnotation], a[apps.SidecarSetBaseAnnotation]}, "\x00")
}

// shape identifies what of a stored ss decides its neighbours (neighbour.Neighbours): its selectors, its
// namespace and whether it is paused; and whether it keeps them all (a SidecarSet asking for the
// policy path is never crowded). A write that changes nothing of it (a status, an image) leaves
// its neighbours as they are.
func shape(ss *v1alpha1.SidecarSet) string {
	data, err := json.Marshal([]any{ss.Spec.Selector, ss.Spec.Namespace, ss.Spec.NamespaceSelector, ss.Spec.InjectionStrategy.Paused,
		apps.AsksForPolicy(ss.Annotations)})
	if err != nil {
		return ""
	}
	return string(ss.UID) + "\x00" + string(data)
}

// neighbours returns the neighbours of each of sets (sorted by name), each list sorted by name
// (of a crowded SidecarSet, neighbour.MaxNeighbours+1 of them), testing again only the pairs with a
// SidecarSet that changed since the last call.
func (mm *Memo) neighbours(sets []*v1alpha1.SidecarSet) [][]*v1alpha1.SidecarSet {
	current := make(map[string]string, len(sets))
	var entered []int
	refreshed := map[string]*v1alpha1.SidecarSet{} // their neighbours hold an older version of them
	for i, ss := range sets {
		v := mm.versionOf(ss)
		current[ss.Name] = v.shape
		switch e, ok := mm.near[ss.Name]; {
		case !ok || v.shape == "" || e.shape != v.shape:
			entered = append(entered, i)
		case e.version != v.version:
			refreshed[ss.Name] = ss
			e.ss, e.version = ss, v.version
		}
	}
	if mm.near == nil || len(entered) > len(sets)/4 {
		mm.near, refreshed, entered = make(map[string]*nearEntry, len(sets)), nil, entered[:0]
		for i := range sets {
			entered = append(entered, i)
		}
	}
	removed := map[string]bool{}
	for name, e := range mm.near {
		if s := current[name]; s == "" || s != e.shape {
			removed[name] = true
			delete(mm.near, name)
		}
	}
	recount := mm.sweep(removed, refreshed)
	if len(recount)+len(entered) > 0 {
		x := neighbour.NewIndex(sets)
		at := make(map[string]int, len(sets))
		for i, ss := range sets {
			at[ss.Name] = i
		}
		entries := make([]*nearEntry, len(sets)) // by index in sets: nil until entered
		for i, ss := range sets {
			if entries[i] = mm.near[ss.Name]; entries[i] != nil {
				x.SetOpen(i, !entries[i].crowded)
			}
		}
		for _, name := range recount {
			mm.enter(x, sets, entries, at[name])
		}
		for _, i := range entered {
			mm.enter(x, sets, entries, i)
		}
	}
	out := make([][]*v1alpha1.SidecarSet, len(sets))
	for i, ss := range sets {
		out[i] = mm.near[ss.Name].list
	}
	return out
}

// sweep takes the removed SidecarSets out of every list and puts the refreshed ones in place of
// their older versions. It returns the crowded SidecarSets that lost a neighbour: they may no
// longer be crowded.
func (mm *Memo) sweep(removed map[string]bool, refreshed map[string]*v1alpha1.SidecarSet) []string {
	if len(removed)+len(refreshed) == 0 {
		return nil
	}
	var recount []string
	for name, e := range mm.near {
		n := len(e.list)
		for i, o := range e.list {
			if ss, ok := refreshed[o.Name]; ok {
				e.list[i], e.digest = ss, ""
			}
		}
		if len(removed) > 0 {
			e.list = slices.DeleteFunc(e.list, func(o *v1alpha1.SidecarSet) bool {
				if removed[o.Name] && neighbour.TenantNamespace(o) == "" {
					e.clusters--
				}
				return removed[o.Name]
			})
		}
		if len(e.list) != n {
			e.digest = ""
			if e.crowded {
				recount = append(recount, name)
			}
		}
	}
	return recount
}

// enter tests sets[i] (the sets x indexes) against the SidecarSets already entered and adds each
// pair found to both lists, but a crowded one's. A pair of crowded SidecarSets is not tested:
// neither reads the other; once sets[i] is crowded, the index offers only the entered SidecarSets
// that are not (x.SetOpen).
func (mm *Memo) enter(x *neighbour.Index, sets []*v1alpha1.SidecarSet, entries []*nearEntry, i int) {
	ss := sets[i]
	v := mm.versionOf(ss)
	e := &nearEntry{shape: v.shape, version: v.version, ss: ss, list: []*v1alpha1.SidecarSet{}}
	x.Candidates(i, func(j int) bool {
		oe := entries[j]
		if j == i || oe == nil || (e.crowded && oe.crowded) || !x.MayShare(i, j) {
			return !e.crowded
		}
		oe.add(ss)
		e.add(oe.ss)
		if oe.crowded {
			x.SetOpen(j, false)
		}
		return !e.crowded
	})
	mm.near[ss.Name], entries[i] = e, e
	x.SetOpen(i, !e.crowded)
}

// add puts o in e's list (sorted by name), unless e is crowded; e becomes crowded when o makes it.
func (e *nearEntry) add(o *v1alpha1.SidecarSet) {
	if e.crowded {
		return
	}
	n := len(e.list)
	if e.list = withNeighbour(e.list, o); len(e.list) == n {
		return
	}
	e.digest = ""
	if neighbour.TenantNamespace(o) == "" {
		e.clusters++
	}
	if e.clusters > neighbour.MaxNeighbours && neighbour.TenantNamespace(e.ss) == "" && !apps.AsksForPolicy(e.ss.Annotations) {
		e.crowded = true
		e.list = slices.DeleteFunc(e.list, func(o *v1alpha1.SidecarSet) bool { return neighbour.TenantNamespace(o) != "" })
	}
}

// memberKey identifies a compilation: a digest of the SidecarSet, its neighbours and the inputs
// of the plan that reach a member but the stamp; "" when one of them is not memoizable.
func (mm *Memo) memberKey(in *Input, base bool) string {
	v := mm.versionOf(in.SidecarSet).digest
	if v == "" {
		return ""
	}
	near := "many"
	if in.Granted || !manyShared(in.SidecarSet, in.Neighbours) {
		if near = mm.neighboursDigest(in.SidecarSet.Name, in.Neighbours); near == "" && len(in.Neighbours) > 0 {
			return ""
		}
	}
	sum := sha256.Sum256([]byte(v + "\x01" + strconv.FormatBool(base) + strconv.FormatBool(in.SortSidecarContainersByName) +
		strconv.FormatBool(in.Granted) + near))
	return string(sum[:])
}

// manyShared reports whether ss is a cluster SidecarSet with more cluster neighbours among near
// than a policy places sidecars among: its compilation reads nothing else of them (see classify),
// so it is not compiled again when they change.
func manyShared(ss *v1alpha1.SidecarSet, near []*v1alpha1.SidecarSet) bool {
	if len(near) <= neighbour.MaxNeighbours || neighbour.TenantNamespace(ss) != "" {
		return false
	}
	n := 0
	for _, o := range near {
		if neighbour.TenantNamespace(o) == "" {
			if n++; n > neighbour.MaxNeighbours {
				return true
			}
		}
	}
	return false
}

// neighboursDigest is listDigest(list), kept in the entry of name when list is its list: a pass
// that changes no neighbour of a SidecarSet does not read its neighbours again (at 10,000 sets
// sharing a common label, reading them was most of every plan).
func (mm *Memo) neighboursDigest(name string, list []*v1alpha1.SidecarSet) string {
	e, ok := mm.near[name]
	if !ok || !sameSlice(e.list, list) {
		return mm.listDigest(list)
	}
	if e.digest == "" {
		e.digest = mm.listDigest(list)
	}
	return e.digest
}

// listDigest digests the versions of list in order (each a fixed-size digest); "" when one of
// them is not memoizable. An order-free sum would be cheaper to keep but lets chosen names cancel
// out.
func (mm *Memo) listDigest(list []*v1alpha1.SidecarSet) string {
	if len(list) == 0 {
		return ""
	}
	h := sha256.New()
	for _, o := range list {
		ov := mm.versionOf(o).digest
		if ov == "" {
			return ""
		}
		h.Write([]byte(ov))
	}
	return string(h.Sum(nil))
}

// sameSlice reports whether a and b are the same slice (same start and length).
func sameSlice(a, b []*v1alpha1.SidecarSet) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// compile is compileMember, memoized. The stamp reaches only the member's hash entries: a
// remembered member keeps those of the stamp it was compiled or placed with, and stamped renders
// them again for the members a policy places. A SidecarSet no policy records yet (one the webhook
// serves) is stamped with the time of each plan: compiling it whole every time made every plan
// compile every such SidecarSet (most of them at 10,000), and rendering its entries every time
// was still a quarter of a plan after one create.
func (mm *Memo) compile(in Input, base bool) (Result, *celpatch.Member, error) {
	key := mm.memberKey(&in, base)
	if e, ok := mm.members[in.SidecarSet.Name]; ok && key != "" && e.key == key {
		return e.result, e.member, nil
	}
	r, m, err := compileMember(in)
	if err != nil || key == "" {
		return r, m, err
	}
	if mm.members == nil {
		mm.members = map[string]memberEntry{}
	}
	mm.members[in.SidecarSet.Name] = memberEntry{key: key, stamp: in.Stamp, result: r, member: m}
	return r, m, nil
}

// stamped returns m, the member compile returned for ss, with the hash entries of stamp: the
// remembered member when they already are, else a copy rendered again (and remembered).
func (mm *Memo) stamped(ss *v1alpha1.SidecarSet, m *celpatch.Member, stamp time.Time) *celpatch.Member {
	e, ok := mm.members[ss.Name]
	if !ok || e.member != m || e.stamp.Equal(stamp) {
		return m // compiled for this plan (and stamp), or already stamped
	}
	c := m.Restamped(ss, stamp)
	e.member, e.stamp = c, stamp
	mm.members[ss.Name] = e
	return c
}

// objects is group.objects, memoized by the members' keys and records.
func (mm *Memo) objects(g *group, excluded []string) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	h := sha256.New()
	h.Write([]byte(g.Key + "\x02" + strings.Join(excluded, "\x00")))
	key := ""
	for _, ss := range g.Sets() {
		e, ok := mm.members[ss.Name]
		if !ok || e.key == "" || e.member == nil {
			h = nil
			break
		}
		r := g.records[ss.Name]
		h.Write([]byte("\x02" + e.key + "\x00" + r.Hash + "\x00" + r.CompiledAt + "\x00" + r.Digest))
	}
	if h != nil {
		key = string(h.Sum(nil))
	}
	if e, ok := mm.groups[g.Name]; ok && key != "" && e.key == key {
		return e.policy.DeepCopy(), e.binding.DeepCopy(), nil
	}
	policy, binding, err := g.objects(excluded)
	if err != nil || key == "" {
		return policy, binding, err
	}
	if mm.groups == nil {
		mm.groups = map[string]groupEntry{}
	}
	mm.groups[g.Name] = groupEntry{key: key, policy: policy.DeepCopy(), binding: binding.DeepCopy()}
	return policy, binding, nil
}

// forget drops the entries of SidecarSets and policies no longer planned.
func (mm *Memo) forget(sets []*v1alpha1.SidecarSet, policies []*admissionregistrationv1.MutatingAdmissionPolicy) {
	keep := make(map[string]bool, len(sets))
	for _, ss := range sets {
		keep[ss.Name] = true
	}
	for name := range mm.members {
		if !keep[name] {
			delete(mm.members, name)
		}
	}
	for name := range mm.versions {
		if !keep[name] {
			delete(mm.versions, name)
		}
	}
	kept := make(map[string]bool, len(policies))
	for _, p := range policies {
		kept[p.Name] = true
	}
	for name := range mm.groups {
		if !kept[name] {
			delete(mm.groups, name)
		}
	}
}

// bases returns the names of the SidecarSets a canary among sets names as its base.
func bases(sets []*v1alpha1.SidecarSet) map[string]bool {
	out := map[string]bool{}
	for _, ss := range sets {
		if base, ok := apps.CanaryBase(ss.Annotations); ok {
			out[base] = true
		}
	}
	return out
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

func byName(ss *v1alpha1.SidecarSet, name string) int { return strings.Compare(ss.Name, name) }
