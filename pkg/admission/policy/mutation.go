package policy

import (
	"fmt"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// mutation builds the CEL of one SidecarSet's policy. Every value it injects is rendered once, in
// Go, by the same renderer as the webhook (sidecar.Render on a pod without containers: the
// features that read the pod are webhook-path), so the policy only decides where things go:
//
//   - a pod that itself declares a container (init container) named like a sidecar of this
//     SidecarSet or of a neighbour is left to the webhook (the injector replaces such a container
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
type mutation struct {
	name string // SidecarSet name

	containers     []entry // Before ones first, each group in spec order
	nBefore        int
	initContainers []entry // Before ones first, each group sorted by name
	nInitBefore    int
	volumes        []entry
	secrets        []entry

	earlierBefore  []string // Before sidecar names of neighbours sorting before this SidecarSet
	laterAfter     []string // After sidecar names of neighbours sorting after it
	beforeInit     []string // Before init container names of every neighbour
	deferNames     []string // container names (own and neighbours') a pod must not declare
	deferInitNames []string // init container names likewise

	hashEntry, hashEntryWithoutImage string // `"name":{...}` members of the hash annotations
}

// entry is one injected object: its name and its CEL literal.
type entry struct {
	name, literal string
}

func newMutation(in *Input, near []*v1alpha1.SidecarSet) (*mutation, error) {
	ss := in.SidecarSet
	m := &mutation{name: ss.Name}
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
	m.placeAmong(near)
	m.hashEntries(ss, in)
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
// containers go.
func (m *mutation) placeAmong(near []*v1alpha1.SidecarSet) {
	for _, o := range near {
		for i := range o.Spec.Containers {
			c := &o.Spec.Containers[i]
			before := c.PodInjectPolicy == v1alpha1.BeforeAppContainerType
			m.deferNames = append(m.deferNames, c.Name)
			switch {
			case before && o.Name < m.name:
				m.earlierBefore = append(m.earlierBefore, c.Name)
			case !before && o.Name > m.name:
				m.laterAfter = append(m.laterAfter, c.Name)
			}
		}
		for i := range o.Spec.InitContainers {
			m.deferInitNames = append(m.deferInitNames, o.Spec.InitContainers[i].Name)
			if o.Spec.InitContainers[i].PodInjectPolicy == v1alpha1.BeforeAppContainerType {
				m.beforeInit = append(m.beforeInit, o.Spec.InitContainers[i].Name)
			}
		}
	}
	m.deferNames = append(m.deferNames, names(m.containers)...)
	m.deferInitNames = append(m.deferInitNames, names(m.initContainers)...)
	for _, s := range []*[]string{&m.earlierBefore, &m.laterAfter, &m.beforeInit, &m.deferNames, &m.deferInitNames} {
		sort.Strings(*s)
	}
}

// hashEntries renders this SidecarSet's members of the two hash annotations.
func (m *mutation) hashEntries(ss *v1alpha1.SidecarSet, in *Input) {
	if len(m.containers)+len(m.initContainers) == 0 {
		return
	}
	list := sidecar.SidecarList(ss.Spec.Containers, ss.Spec.InitContainers)
	ts := metav1.NewTime(in.Stamp)
	member := func(e sidecar.HashEntry) string {
		s := sidecar.HashMap{ss.Name: e}.String()
		return s[1 : len(s)-1]
	}
	m.hashEntry = member(sidecar.HashEntry{UpdateTimestamp: ts, Hash: ss.Annotations[sidecar.HashAnnotation],
		SidecarSetName: ss.Name, SidecarList: list, ControllerRevision: ss.Status.LatestRevision})
	m.hashEntryWithoutImage = member(sidecar.HashEntry{UpdateTimestamp: ts, Hash: ss.Annotations[sidecar.HashWithoutImageAnnotation],
		SidecarSetName: ss.Name, SidecarList: list})
}

// matchConditions skip pods this SidecarSet already injected (reinvocation, or a pod submitted
// with its sidecars), pods that are not active, as the injector does, and pods left to the
// webhook because they declare a sidecar's name.
func (m *mutation) matchConditions() []admissionregistrationv1.MatchCondition {
	declares := fmt.Sprintf("!object.spec.containers.exists(c, c.name in %s && !(%s))", stringList(m.deferNames), isInjected("c"))
	if len(m.deferInitNames) > 0 {
		declares += fmt.Sprintf(" && !object.spec.?initContainers.orValue([]).exists(c, c.name in %s && !(%s))", stringList(m.deferInitNames), isInjected("c"))
	}
	return []admissionregistrationv1.MatchCondition{
		{Name: "no-declared-sidecar", Expression: declares},
		{Name: "not-injected", Expression: fmt.Sprintf("!object.metadata.?annotations[?%s].orValue('').split(',').exists(n, n == %s)",
			quote(sidecar.InjectedListAnnotation), quote(m.name))},
		{Name: "active", Expression: "!has(object.metadata.deletionTimestamp) && !(object.?status.?phase.orValue('') in ['Succeeded', 'Failed'])"},
	}
}

// variables are the policy's named expressions, referenced by expression().
func (m *mutation) variables() []admissionregistrationv1.Variable {
	var vs []admissionregistrationv1.Variable
	add := func(name, format string, args ...any) {
		vs = append(vs, admissionregistrationv1.Variable{Name: name, Expression: fmt.Sprintf(format, args...)})
	}
	add("ann", "object.metadata.?annotations.orValue({})")
	if len(m.containers) > 0 {
		add("names", "object.spec.containers.map(c, c.name)")
		add("injected", "object.spec.containers.map(c, %s)", isInjected("c"))
		add("beforeAt", "%s", firstOr("lists.range(size(variables.names)).filter(i, !(variables.injected[i] && variables.names[i] in %s))", "size(variables.names)", stringList(m.earlierBefore)))
		add("apps", "lists.range(size(variables.names)).filter(i, !variables.injected[i])")
		add("lastApp", "size(variables.apps) == 0 ? -1 : variables.apps[size(variables.apps) - 1]")
		add("afterAt", "%s", firstOr("lists.range(size(variables.names)).filter(i, i > variables.lastApp && variables.injected[i] && variables.names[i] in %s)", "size(variables.names)", stringList(m.laterAfter)))
	}
	if len(m.initContainers) > 0 {
		add("inits", "object.spec.?initContainers.orValue([])")
		add("initNames", "variables.inits.map(c, c.name)")
		add("initInjected", "variables.inits.map(c, %s)", isInjected("c"))
		add("initOwn", "lists.range(size(variables.initNames)).filter(i, !variables.initInjected[i])")
		add("lastOwnInit", "size(variables.initOwn) == 0 ? -1 : variables.initOwn[size(variables.initOwn) - 1]")
	}
	if m.hashEntry != "" {
		add("hash", "%s", m.hashValue(sidecar.HashAnnotation, m.hashEntry))
		add("hashWithoutImage", "%s", m.hashValue(sidecar.HashWithoutImageAnnotation, m.hashEntryWithoutImage))
	}
	add("injectedList", "(variables.ann[?%s].orValue('').split(',') + [%s]).filter(n, n != '').distinct().sort().join(',')",
		quote(sidecar.InjectedListAnnotation), quote(m.name))
	return vs
}

// hashValue is the CEL of annotation key with member inserted at its sorted position (members are
// sorted by SidecarSet name, which each one repeats as sidecarSetName).
func (m *mutation) hashValue(key, member string) string {
	old := fmt.Sprintf("variables.ann[?%s].orValue('')", quote(key))
	later := fmt.Sprintf(`%s.findAll('"sidecarSetName":"[^"]*"').map(s, s.substring(18, size(s) - 1)).filter(n, n > %s)`, old, quote(m.name))
	return fmt.Sprintf(`%[1]s == '' || %[1]s == '{}' ? %[2]s : (size(%[3]s) == 0 ? %[1]s.substring(0, size(%[1]s) - 1) + ',' + %[4]s + '}' : %[1]s.replace('"' + %[3]s[0] + '":{', %[4]s + ',"' + %[3]s[0] + '":{', 1))`,
		old, quote("{"+member+"}"), later, quote(member))
}

// expression is the JSONPatch expression: the operations of every part, in order.
func (m *mutation) expression() string {
	var parts []string
	if len(m.containers) > 0 {
		parts = append(parts, m.containerOps())
	}
	if len(m.initContainers) > 0 {
		parts = append(parts, m.initContainerOps())
	}
	if len(m.volumes) > 0 {
		parts = append(parts, appendOps("/spec/volumes", "object.spec.?volumes", m.volumes))
	}
	if len(m.secrets) > 0 {
		parts = append(parts, appendOps("/spec/imagePullSecrets", "object.spec.?imagePullSecrets", m.secrets))
	}
	parts = append(parts, m.annotationOps())
	return strings.Join(parts, " +\n")
}

// containerOps inserts the Before sidecars at beforeAt and the others at afterAt, each shifted by
// the number inserted before it (all in front of it).
func (m *mutation) containerOps() string {
	return m.listOps("/spec/containers/", m.containers, m.nBefore, "variables.beforeAt", "variables.afterAt")
}

// initContainerOps does the same for init containers, whose insert positions depend on the name
// of each (the injected ones form name-sorted runs), creating the list first when the pod has none.
func (m *mutation) initContainerOps() string {
	bi := stringList(m.beforeInit)
	own := stringList(names(m.initContainers))
	// Before: in front of the first init container that is not an injected Before one with a smaller name.
	beforePos := firstOr(fmt.Sprintf("lists.range(size(variables.initNames)).filter(i, !(variables.initInjected[i] && variables.initNames[i] in %s && variables.initNames[i] < %s[k]))", bi, own), "size(variables.initNames)")
	// After: in front of the first injected After one with a greater name behind the pod's own.
	afterPos := firstOr(fmt.Sprintf("lists.range(size(variables.initNames)).filter(i, i > variables.lastOwnInit && variables.initInjected[i] && !(variables.initNames[i] in %s) && variables.initNames[i] > %s[k])", bi, own), "size(variables.initNames)")
	return fmt.Sprintf("(size(variables.inits) == 0 ? [JSONPatch{op: 'add', path: '/spec/initContainers', value: []}] : []) + %s",
		m.listOps("/spec/initContainers/", m.initContainers, m.nInitBefore, beforePos, afterPos))
}

func (m *mutation) listOps(path string, es []entry, nBefore int, beforeAt, afterAt string) string {
	return fmt.Sprintf("%s.transformList(k, c, JSONPatch{op: 'add', path: %s + string((k < %d ? %s : %s) + k), value: c})",
		listOf(es), quote(path), nBefore, beforeAt, afterAt)
}

// appendOps adds the entries whose name the list at path lacks, or the whole list when it is absent.
func appendOps(path, field string, es []entry) string {
	return fmt.Sprintf("(%[2]s.hasValue() ? [] : [JSONPatch{op: 'add', path: %[1]s, value: []}]) + %[3]s.transformList(k, v, !(%[4]s[k] in %[2]s.orValue([]).map(x, x.name)), JSONPatch{op: 'add', path: %[5]s, value: v})",
		quote(path), field, listOf(es), stringList(names(es)), quote(path+"/-"))
}

// annotationOps writes the hash annotations (when this SidecarSet injects containers) and the
// injected list, creating the annotation map when the pod has none.
func (m *mutation) annotationOps() string {
	type kv struct{ key, value string }
	values := []kv{{sidecar.InjectedListAnnotation, "variables.injectedList"}}
	if m.hashEntry != "" {
		values = append(values, kv{sidecar.HashAnnotation, "variables.hash"}, kv{sidecar.HashWithoutImageAnnotation, "variables.hashWithoutImage"})
	}
	var each, whole []string
	for _, v := range values {
		each = append(each, fmt.Sprintf("JSONPatch{op: 'add', path: %s, value: %s}", quote("/metadata/annotations/"+escapePointer(v.key)), v.value))
		whole = append(whole, fmt.Sprintf("%s: %s", quote(v.key), v.value))
	}
	return fmt.Sprintf("(has(object.metadata.annotations) ? [%s] : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {%s}}])",
		strings.Join(each, ", "), strings.Join(whole, ", "))
}

// isInjected is the CEL of sidecar.IsInjected on container variable c.
func isInjected(c string) string {
	return fmt.Sprintf("%s.?env.orValue([]).exists(e, e.name == %s && e.?value.orValue('') == 'true')", c, quote(sidecar.InjectedEnv))
}

// firstOr is the first element of list expression list, or def when it is empty.
func firstOr(list, def string, args ...any) string {
	l := fmt.Sprintf(list, args...)
	return fmt.Sprintf("(size(%[1]s) == 0 ? %[2]s : %[1]s[0])", l, def)
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

func stringList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

func escapePointer(s string) string { return pointerEscaper.Replace(s) }
