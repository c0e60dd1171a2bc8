package celpatch

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Member is one SidecarSet inside a group policy (see Group): what it injects, rendered once in
// Go by the same renderer as the webhook (sidecar.Render on a pod without containers: the features
// that read the pod are webhook-path), and the facts that decide where its parts go:
//
//   - a pod that itself declares a container (init container) named like a sidecar of this
//     SidecarSet or of a neighbour (a NamespacedSidecarSet's only in its namespace) is left to the
//     webhook (the injector replaces such a container
//     in place, and a replaced container looks like an inserted one to the policies that run
//     after it), so the policies only ever insert;
//   - containers with podInjectPolicy BeforeAppContainer go after the Before sidecars of
//     SidecarSets that sort before this one, the others after the app containers and the After
//     sidecars of SidecarSets that sort before it: the pod is the same whatever order kube-apiserver
//     runs the policies in, and the same as the webhook's, which injects in name order;
//   - init containers go into the name-sorted run of injected init containers, in front of the
//     pod's own (BeforeAppContainer) or after them;
//   - volumes and imagePullSecrets the pod lacks are added (a volume list is keyed by name: its order
//     across SidecarSets is not part of the answer);
//   - the entry of this SidecarSet goes into the JSON hash annotations at its sorted key, and its
//     name into the sorted injected list.
type Member struct {
	name  string // SidecarSet name
	sel   string // CEL: the SidecarSet's selector and spec.namespace select the pod
	selL  string // sel over the label map l (for match conditions, which see no variables)
	selNS string // CEL: its namespaceSelector selects the pod's namespace ("" without one)

	containers     []entry // Before ones first, each group in spec order
	nBefore        int
	initContainers []entry // Before ones first, each group sorted by name
	nInitBefore    int
	volumes        []entry
	secrets        []entry

	earlierBefore  nameSet  // Before sidecar names of neighbours sorting before this SidecarSet
	laterAfter     nameSet  // After sidecar names of neighbours sorting after it
	beforeInit     nameSet  // Before init container names of every neighbour
	deferNames     nameSet  // container names (own and neighbours') a pod must not declare
	deferInitNames nameSet  // init container names likewise
	handoff        []string // namespaces whose pods this policy leaves to the webhook (see neighbour.ScopeOf)

	hashEntry, hashEntryWithoutImage string // `"name":{...}` members of the hash annotations
}

// entry is one injected object: its name and its CEL literal.
type entry struct {
	name, literal string
}

// NewMember renders ss, defaulted and with the hash annotations the server stamps, as a member
// placed among the neighbours of scope; its hash annotation entries carry stamp (a policy cannot
// read the clock).
func NewMember(ss *v1alpha1.SidecarSet, stamp time.Time, scope neighbour.Scope) (*Member, error) {
	m := &Member{name: ss.Name, sel: selectsCEL(ss, "variables.labels"), selL: selectsCEL(ss, "l"), selNS: namespaceSelectsCEL(ss)}
	empty := &corev1.Pod{}
	var volumeNames []string
	var err error
	render := func(list []v1alpha1.SidecarContainer, init bool, typeName string) ([]entry, int, error) {
		var before, after []entry
		for i := range list {
			r := sidecar.Render(&list[i], empty, sidecar.RenderOptions{Init: init})
			volumeNames = append(volumeNames, r.VolumeNames...)
			lit, err := literal(&r.Containers[0], typeName)
			if err != nil {
				return nil, 0, err
			}
			e := entry{r.Containers[0].Name, lit}
			if list[i].PodInjectPolicy == v1alpha1.BeforeAppContainerType {
				before = append(before, e)
			} else {
				after = append(after, e)
			}
		}
		if init {
			sortEntries(before)
			sortEntries(after)
		}
		return append(before, after...), len(before), nil
	}
	if m.initContainers, m.nInitBefore, err = render(ss.Spec.InitContainers, true, "Object.spec.initContainers"); err != nil {
		return nil, err
	}
	if m.containers, m.nBefore, err = render(ss.Spec.Containers, false, "Object.spec.containers"); err != nil {
		return nil, err
	}
	if m.volumes, err = volumeEntries(ss.Spec.Volumes, volumeNames); err != nil {
		return nil, err
	}
	if m.secrets, err = secretEntries(ss.Spec.ImagePullSecrets); err != nil {
		return nil, err
	}
	m.placeAmong(scope)
	m.hashEntries(ss, stamp)
	return m, nil
}

func sortEntries(es []entry) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].name < es[j].name })
}

// volumeEntries returns the SidecarSet volumes the sidecars reference, first reference first; the
// last definition of a name counts and unknown names are skipped, as in the injector.
func volumeEntries(volumes []corev1.Volume, names []string) ([]entry, error) {
	var out []entry
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		for i := len(volumes) - 1; i >= 0; i-- {
			if volumes[i].Name == n {
				lit, err := literal(&volumes[i], "Object.spec.volumes")
				if err != nil {
					return nil, err
				}
				out = append(out, entry{n, lit})
				break
			}
		}
	}
	return out, nil
}

func secretEntries(secrets []corev1.LocalObjectReference) ([]entry, error) {
	var out []entry
	seen := map[string]bool{}
	for i := range secrets {
		if seen[secrets[i].Name] {
			continue
		}
		seen[secrets[i].Name] = true
		lit, err := literal(&secrets[i], "Object.spec.imagePullSecrets")
		if err != nil {
			return nil, err
		}
		out = append(out, entry{secrets[i].Name, lit})
	}
	return out, nil
}

// placeAmong records the sidecar names of the neighbours that decide where this SidecarSet's
// containers go: those of shared neighbours for every pod, those of NamespacedSidecarSets for the
// pods of their namespace.
func (m *Member) placeAmong(scope neighbour.Scope) {
	lists := []*nameSet{&m.earlierBefore, &m.laterAfter, &m.beforeInit, &m.deferNames, &m.deferInitNames}
	m.placeAmongIn("", scope.Shared)
	for ns, near := range scope.Tenants {
		m.placeAmongIn(ns, near)
	}
	m.deferNames.add("", names(m.containers)...)
	m.deferInitNames.add("", names(m.initContainers)...)
	for _, l := range lists {
		l.normalize()
	}
	m.handoff = distinctSorted(append([]string(nil), scope.Handoff...))
}

// placeAmongIn records the names of near for the pods of namespace ns ("" for every pod).
func (m *Member) placeAmongIn(ns string, near []*v1alpha1.SidecarSet) {
	for _, o := range near {
		for i := range o.Spec.Containers {
			c := &o.Spec.Containers[i]
			before := c.PodInjectPolicy == v1alpha1.BeforeAppContainerType
			m.deferNames.add(ns, c.Name)
			switch {
			case before && o.Name < m.name:
				m.earlierBefore.add(ns, c.Name)
			case !before && o.Name > m.name:
				m.laterAfter.add(ns, c.Name)
			}
		}
		for i := range o.Spec.InitContainers {
			m.deferInitNames.add(ns, o.Spec.InitContainers[i].Name)
			if o.Spec.InitContainers[i].PodInjectPolicy == v1alpha1.BeforeAppContainerType {
				m.beforeInit.add(ns, o.Spec.InitContainers[i].Name)
			}
		}
	}
}

// nameSet is a set of sidecar names: all apply to every pod, in[ns] to the pods of namespace ns
// only (names a NamespacedSidecarSet of ns brings).
type nameSet struct {
	all []string
	in  map[string][]string
}

func (s *nameSet) add(ns string, names ...string) {
	if ns == "" {
		s.all = append(s.all, names...)
		return
	}
	if s.in == nil {
		s.in = map[string][]string{}
	}
	s.in[ns] = append(s.in[ns], names...)
}

// normalize sorts the lists and drops duplicates (and names all has from the namespaced ones).
func (s *nameSet) normalize() {
	s.all = distinctSorted(s.all)
	shared := setOf(s.all)
	for ns, l := range s.in {
		l = slices.DeleteFunc(distinctSorted(l), func(n string) bool { return shared[n] })
		if len(l) == 0 {
			delete(s.in, ns)
		} else {
			s.in[ns] = l
		}
	}
}

func (s *nameSet) empty() bool { return len(s.all) == 0 && len(s.in) == 0 }

// has is the CEL of "the name x is in the set" for the pod under admission (request.namespace
// picks the namespaced names: a map lookup, whatever the number of namespaces).
func (s *nameSet) has(x string) string {
	if len(s.in) == 0 {
		return fmt.Sprintf("%s in %s", x, StringList(s.all))
	}
	byNS := make([]string, 0, len(s.in))
	for _, ns := range slices.Sorted(maps.Keys(s.in)) {
		byNS = append(byNS, Quote(ns)+": "+StringList(s.in[ns]))
	}
	return fmt.Sprintf("(%s in %s || %s in {%s}[?request.namespace].orValue([]))", x, StringList(s.all), x, strings.Join(byNS, ", "))
}

// String renders the set for digests and sizes.
func (s *nameSet) String() string {
	out := StringList(s.all)
	for _, ns := range slices.Sorted(maps.Keys(s.in)) {
		out += "\x00" + ns + "\x00" + StringList(s.in[ns])
	}
	return out
}

// hashEntries renders this SidecarSet's members of the two hash annotations, updated at stamp.
func (m *Member) hashEntries(ss *v1alpha1.SidecarSet, stamp time.Time) {
	if len(m.containers)+len(m.initContainers) == 0 {
		return
	}
	list := sidecar.SidecarList(ss.Spec.Containers, ss.Spec.InitContainers)
	ts := metav1.NewTime(stamp)
	member := func(e sidecar.HashEntry) string {
		s := sidecar.HashMap{ss.Name: e}.String()
		return s[1 : len(s)-1]
	}
	m.hashEntry = member(sidecar.HashEntry{UpdateTimestamp: ts, Hash: ss.Annotations[sidecar.HashAnnotation],
		SidecarSetName: ss.Name, SidecarList: list, ControllerRevision: ss.Status.LatestRevision})
	m.hashEntryWithoutImage = member(sidecar.HashEntry{UpdateTimestamp: ts, Hash: ss.Annotations[sidecar.HashWithoutImageAnnotation],
		SidecarSetName: ss.Name, SidecarList: list})
}

// Restamped returns a copy of m, the member of ss, whose hash annotation entries carry stamp.
func (m *Member) Restamped(ss *v1alpha1.SidecarSet, stamp time.Time) *Member {
	c := *m
	c.hashEntries(ss, stamp)
	return &c
}

// DeferNames returns the container names that leave a pod to the webhook when it declares one as
// its own: those for every pod, and those for the pods of some namespaces only (beyond all), by
// namespace. The lists are the member's: callers only read them.
func (m *Member) DeferNames() (all []string, in map[string][]string) {
	return m.deferNames.all, m.deferNames.in
}

// DeferInitNames is DeferNames for init containers.
func (m *Member) DeferInitNames() (all []string, in map[string][]string) {
	return m.deferInitNames.all, m.deferInitNames.in
}

// Handoff returns the namespaces whose pods the member's policy leaves to the webhook (see
// neighbour.ScopeOf), sorted.
func (m *Member) Handoff() []string { return m.handoff }

// size estimates the characters this member adds to a policy's expressions.
func (m *Member) size() int {
	n := 400 + 2*len(m.sel) + len(m.selNS) + len(m.hashEntry) + len(m.hashEntryWithoutImage)
	for _, es := range [][]entry{m.containers, m.initContainers, m.volumes, m.secrets} {
		for _, e := range es {
			n += len(e.literal) + 300
		}
	}
	for _, s := range []*nameSet{&m.earlierBefore, &m.laterAfter, &m.beforeInit, &m.deferNames, &m.deferInitNames} {
		n += len(s.String()) + 40*len(s.in)
	}
	return n + len(StringList(m.handoff))
}

// Digest identifies what the member injects and where: two plans that give a SidecarSet the same
// digest inject it the same way.
func (m *Member) Digest() string {
	h := fnv.New64a()
	for _, es := range [][]entry{m.containers, m.initContainers, m.volumes, m.secrets} {
		for _, e := range es {
			fmt.Fprintf(h, "%s\x00%s\x00", e.name, e.literal)
		}
		h.Write([]byte{1})
	}
	for _, s := range []*nameSet{&m.earlierBefore, &m.laterAfter, &m.beforeInit, &m.deferNames, &m.deferInitNames} {
		fmt.Fprintf(h, "%s\x01", s.String())
	}
	fmt.Fprintf(h, "%s\x01", strings.Join(m.handoff, "\x00"))
	fmt.Fprintf(h, "%d\x00%d\x00%s\x00%s\x00%s\x00%s", m.nBefore, m.nInitBefore, m.sel, m.selNS, m.hashEntry, m.hashEntryWithoutImage)
	return fmt.Sprintf("%016x", h.Sum64())
}

// selectsCEL is the CEL of "ss's selector selects the pod, in its spec.namespace if it has one",
// over the label map expression labels.
// Match conditions do not see the namespace object, so its namespaceSelector is apart.
func selectsCEL(ss *v1alpha1.SidecarSet, labels string) string {
	sel := selectorCEL(ss.Spec.Selector, labels)
	if ss.Spec.Namespace != "" {
		sel += " && request.namespace == " + Quote(ss.Spec.Namespace)
	}
	return sel
}

// namespaceSelectsCEL is the CEL of "ss's namespaceSelector selects the pod's namespace", "" when
// it has none or spec.namespace wins over it (as in the injector).
func namespaceSelectsCEL(ss *v1alpha1.SidecarSet) string {
	if ss.Spec.Namespace != "" || ss.Spec.NamespaceSelector == nil {
		return ""
	}
	return selectorCEL(ss.Spec.NamespaceSelector, "variables.nsLabels")
}

// selectorCEL is the CEL of a label selector over the label map expression labels; a selector
// without requirements selects everything.
func selectorCEL(sel *metav1.LabelSelector, labels string) string {
	if sel == nil {
		return "true"
	}
	has := func(k string) string { return fmt.Sprintf("%s in %s", Quote(k), labels) }
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		terms = append(terms, fmt.Sprintf("(%s && %s[%s] == %s)", has(k), labels, Quote(k), Quote(sel.MatchLabels[k])))
	}
	for _, r := range sel.MatchExpressions {
		in := fmt.Sprintf("(%s && %s[%s] in %s)", has(r.Key), labels, Quote(r.Key), StringList(r.Values))
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			terms = append(terms, in)
		case metav1.LabelSelectorOpNotIn:
			terms = append(terms, "!"+in)
		case metav1.LabelSelectorOpExists:
			terms = append(terms, "("+has(r.Key)+")")
		case metav1.LabelSelectorOpDoesNotExist:
			terms = append(terms, "!("+has(r.Key)+")")
		default:
			terms = append(terms, "false")
		}
	}
	if len(terms) == 0 {
		return "true"
	}
	return strings.Join(terms, " && ")
}

func setOf(items []string) map[string]bool {
	out := make(map[string]bool, len(items))
	for _, i := range items {
		out[i] = true
	}
	return out
}

func distinctSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// IsInjected is the CEL of sidecar.IsInjected on container variable c.
func IsInjected(c string) string {
	return fmt.Sprintf("%s.?env.orValue([]).exists(e, e.name == %s && e.?value.orValue('') == 'true')", c, Quote(sidecar.InjectedEnv))
}

// firstOr is the first element of list expression list, or def when it is empty; when the
// boolean expression any is false (the pod has no injected container: list is known) it is fresh,
// without evaluating list.
func firstOr(list, def, any, fresh string) string {
	return fmt.Sprintf("(!%s ? %s : %s[?0].orValue(%s))", any, fresh, list, def)
}

func names(es []entry) []string {
	out := make([]string, len(es))
	for i := range es {
		out[i] = es[i].name
	}
	return out
}

func listOf(es []entry) string {
	lits := make([]string, len(es))
	for i := range es {
		lits[i] = es[i].literal
	}
	return "[" + strings.Join(lits, ", ") + "]"
}

func StringList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }
