package policytest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Op is the kind of one write of an interleaved sequence.
type Op string

// The writes of an interleaved sequence.
const (
	// OpCreate creates a SidecarSet.
	OpCreate Op = "create"
	// OpImage changes the image of a SidecarSet's first sidecar.
	OpImage Op = "image"
	// OpSelector changes a SidecarSet's pod selector.
	OpSelector Op = "selector"
	// OpCanary creates a canary of a base that has none.
	OpCanary Op = "canary"
	// OpUncanary deletes a canary.
	OpUncanary Op = "uncanary"
	// OpDelete deletes a SidecarSet that is not a canary (a base's canary stays).
	OpDelete Op = "delete"
)

// Step is one write of an interleaved sequence and the pods to create as soon as it returns.
type Step struct {
	Op Op
	// Set is the SidecarSet as the write leaves it (not defaulted), or the one deleted.
	Set *v1alpha1.SidecarSet
	// Previous is its version before an update (nil for creates and deletes).
	Previous *v1alpha1.SidecarSet
	// Pods are created right after the write returns: pods Set selects (for a selector change,
	// also pods Previous selected; for a canary, pods of its base with and without the canary's
	// label), pods other live SidecarSets select, and a pod none selects.
	Pods []*corev1.Pod
	// Pause is how long the sequence waits after the pods before the next write.
	Pause time.Duration
	// Quiet asks the write to wait until the server has settled every write before it and
	// stopped sending every pod to its webhook (the intake): the write then starts from the
	// selective webhooks and the policies alone.
	Quiet bool
}

// Interleaved returns n writes of SidecarSets whose names start with prefix, each with its pods:
// creates, image and selector changes, canaries added to and removed from bases, and deletes, with
// at most 8 SidecarSets live at once. Every SidecarSet is one the policies can serve but for the
// canary relation; sidecar, init container and volume names are the SidecarSet's own (or the
// volume "shared", always defined alike), so no write conflicts with another SidecarSet whatever
// the selectors. pauses are the waits drawn for the steps, uniformly. The first delete of the
// second half of the sequence, or else its first selector change, is Quiet.
func (g *Corpus) Interleaved(n int, prefix string, pauses []time.Duration) []Step {
	s := &sequence{g: g, prefix: prefix, live: map[string]*v1alpha1.SidecarSet{}}
	steps := make([]Step, 0, n)
	for i := 0; i < n; i++ {
		st := s.next(i)
		st.Pods = s.pods(i, st)
		if len(pauses) > 0 {
			st.Pause = pauses[g.r.IntN(len(pauses))]
		}
		steps = append(steps, st)
	}
	for _, op := range []Op{OpDelete, OpSelector} {
		if i := slices.IndexFunc(steps[n/2:], func(st Step) bool { return st.Op == op }); i >= 0 {
			steps[n/2+i].Quiet = true
			break
		}
	}
	return steps
}

// sequence is the state of the writes generated so far.
type sequence struct {
	g       *Corpus
	prefix  string
	created int
	live    map[string]*v1alpha1.SidecarSet
}

// maxLive bounds the SidecarSets stored at once.
const maxLive = 8

// names returns the live SidecarSets' names, sorted, that keep says to.
func (s *sequence) names(keep func(*v1alpha1.SidecarSet) bool) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(s.live)) {
		if keep(s.live[name]) {
			out = append(out, name)
		}
	}
	return out
}

func (s *sequence) pick(names []string) *v1alpha1.SidecarSet {
	return s.live[names[s.g.r.IntN(len(names))]]
}

func isCanary(ss *v1alpha1.SidecarSet) bool { _, ok := apps.CanaryBase(ss.Annotations); return ok }

// canaryOf returns the live canary of base, or nil.
func (s *sequence) canaryOf(base string) *v1alpha1.SidecarSet {
	for _, ss := range s.live {
		if b, ok := apps.CanaryBase(ss.Annotations); ok && b == base {
			return ss
		}
	}
	return nil
}

// next draws the write of step i among those the live SidecarSets allow and applies it.
func (s *sequence) next(i int) Step {
	plain := s.names(func(ss *v1alpha1.SidecarSet) bool { return !isCanary(ss) })
	canaries := s.names(isCanary)
	bare := s.names(func(ss *v1alpha1.SidecarSet) bool { return !isCanary(ss) && s.canaryOf(ss.Name) == nil })
	var ops []Op
	if len(s.live) < maxLive {
		ops = append(ops, OpCreate, OpCreate)
		if len(bare) > 0 {
			ops = append(ops, OpCanary)
		}
	}
	if len(s.live) >= 3 {
		ops = append(ops, OpImage, OpImage, OpSelector, OpSelector, OpDelete)
		if len(canaries) > 0 {
			ops = append(ops, OpUncanary)
		}
	}
	st := Step{Op: ops[s.g.r.IntN(len(ops))]}
	switch st.Op {
	case OpCreate:
		st.Set = s.sidecarSet()
	case OpCanary:
		st.Set = s.canary(s.pick(bare))
	case OpImage:
		st.Previous = s.pick(slices.Concat(plain, canaries))
		st.Set = st.Previous.DeepCopy()
		st.Set.Spec.Containers[0].Image = fmt.Sprintf("%s-s%d", st.Previous.Spec.Containers[0].Image, i)
	case OpSelector:
		st.Previous = s.pick(plain)
		st.Set = st.Previous.DeepCopy()
		for st.Set.Spec.Selector.String() == st.Previous.Spec.Selector.String() {
			st.Set.Spec.Selector = s.selector()
		}
	case OpUncanary:
		st.Set = s.pick(canaries)
	case OpDelete:
		st.Set = s.pick(plain)
	}
	if st.Op == OpUncanary || st.Op == OpDelete {
		delete(s.live, st.Set.Name)
	} else {
		s.live[st.Set.Name] = st.Set
	}
	return st
}

// sidecarSet returns a new SidecarSet: one or two sidecars, up to two init containers (some
// native sidecars), volumes of its own and maybe the shared one, a pull secret, a selector of
// one of the shapes of selector and, for some, a namespace restriction to the first namespace.
func (s *sequence) sidecarSet() *v1alpha1.SidecarSet {
	g := s.g
	ss := &v1alpha1.SidecarSet{}
	ss.Name = fmt.Sprintf("%s-%c%d", s.prefix, 'a'+rune(g.r.IntN(6)), s.created)
	s.created++
	ss.Spec.Selector = s.selector()
	switch g.r.IntN(4) {
	case 0:
		ss.Spec.Namespace = g.Namespaces[0]
	case 1:
		ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	}
	for v, nv := 0, g.r.IntN(3); v < nv; v++ {
		ss.Spec.Volumes = append(ss.Spec.Volumes, g.volume(fmt.Sprintf("%s-v%d", ss.Name, v)))
	}
	if g.chance(0.3) {
		ss.Spec.Volumes = append(ss.Spec.Volumes, corev1.Volume{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	for c, nc := 0, 1+g.r.IntN(2); c < nc; c++ {
		ss.Spec.Containers = append(ss.Spec.Containers, g.sidecar(fmt.Sprintf("%s-c%d", ss.Name, c), ss.Spec.Volumes, false))
	}
	for c, nc := 0, g.r.IntN(3); c < nc; c++ {
		ss.Spec.InitContainers = append(ss.Spec.InitContainers, g.sidecar(fmt.Sprintf("%s-i%d", ss.Name, c), ss.Spec.Volumes, true))
	}
	if g.chance(0.4) {
		ss.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: fmt.Sprintf("secret%d", g.r.IntN(3))}}
	}
	return ss
}

// canary returns a canary of base: its sidecars, init containers and volumes under the same
// names with other images, selecting base's pods labelled track=canary.
func (s *sequence) canary(base *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{Spec: *base.Spec.DeepCopy()}
	ss.Name = fmt.Sprintf("%s-%c%d", s.prefix, 'a'+rune(s.g.r.IntN(6)), s.created)
	s.created++
	ss.Annotations = map[string]string{apps.SidecarSetCanaryAnnotation: "true", apps.SidecarSetBaseAnnotation: base.Name}
	ss.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType // a canary's only strategy
	for i := range ss.Spec.Containers {
		ss.Spec.Containers[i].Image += "-canary"
	}
	for i := range ss.Spec.InitContainers {
		ss.Spec.InitContainers[i].Image += "-canary"
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"track": "canary"}}
	for k, v := range base.Spec.Selector.MatchLabels {
		sel.MatchLabels[k] = v
	}
	for _, r := range base.Spec.Selector.MatchExpressions {
		if r.Key != "track" {
			sel.MatchExpressions = append(sel.MatchExpressions, r)
		}
	}
	ss.Spec.Selector = sel
	return ss
}

// appValues are the values of the label app that selectors name; pods labelled app=none are
// selected by none of them.
var appValues = []string{"web", "db", "api", "cache", "queue"}

// selector returns a selector of one of five shapes: one app value, two app values (In), any
// tier (Exists), one app value without track (DoesNotExist), one app value with tier=front.
func (s *sequence) selector() *metav1.LabelSelector {
	r := s.g.r
	v := appValues[r.IntN(len(appValues))]
	switch r.IntN(5) {
	case 0:
		w := appValues[r.IntN(len(appValues))]
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: slices.Compact(slices.Sorted(slices.Values([]string{v, w})))}}}
	case 1:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	case 2:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "track", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	case 3:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v, "tier": "front"}}
	}
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
}

// pods returns the pods of step i (see Step.Pods), named s<i>-<k>.
func (s *sequence) pods(i int, st Step) []*corev1.Pod {
	var out []*corev1.Pod
	add := func(ss *v1alpha1.SidecarSet, extra map[string]string) {
		out = append(out, s.pod(fmt.Sprintf("s%d-%d", i, len(out)), ss, st.Set, extra))
	}
	for k := 0; k < 3; k++ {
		add(st.Set, nil)
	}
	switch {
	case st.Op == OpSelector:
		add(st.Previous, nil)
		add(st.Previous, nil)
	case st.Op == OpCanary:
		base := s.live[st.Set.Annotations[apps.SidecarSetBaseAnnotation]]
		add(base, map[string]string{"track": "canary"})
		add(base, nil)
	case st.Op == OpDelete && s.canaryOf(st.Set.Name) != nil:
		add(s.canaryOf(st.Set.Name), nil) // its base gone, the canary alone
	}
	if others := s.names(func(ss *v1alpha1.SidecarSet) bool { return ss.Name != st.Set.Name }); len(others) > 0 {
		add(s.pick(others), nil)
		add(s.pick(others), nil)
	}
	add(nil, nil)
	return out
}

// pod returns a pod ss selects (labels its selector requires, in a namespace it accepts; none
// selects it when ss is nil), with extra labels and maybe tier or track labels more. Its
// containers are drawn as the corpus's (Corpus.pod), which may name a sidecar of written or of a
// live SidecarSet.
func (s *sequence) pod(name string, ss, written *v1alpha1.SidecarSet, extra map[string]string) *corev1.Pod {
	g := s.g
	sets := []*v1alpha1.SidecarSet{written}
	for _, n := range s.names(func(o *v1alpha1.SidecarSet) bool { return o.Name != written.Name }) {
		sets = append(sets, s.live[n])
	}
	pod := g.pod(sets)
	pod.Name = name
	pod.Namespace = g.Namespaces[g.r.IntN(2)]
	pod.Labels = map[string]string{"app": "none"}
	if ss == nil {
		return pod
	}
	if ss.Spec.Namespace != "" || ss.Spec.NamespaceSelector != nil {
		pod.Namespace = g.Namespaces[0]
	}
	without := map[string]bool{}
	for k, v := range ss.Spec.Selector.MatchLabels {
		pod.Labels[k] = v
	}
	for _, r := range ss.Spec.Selector.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			pod.Labels[r.Key] = r.Values[g.r.IntN(len(r.Values))]
		case metav1.LabelSelectorOpExists:
			pod.Labels[r.Key] = []string{"front", "back"}[g.r.IntN(2)]
		case metav1.LabelSelectorOpDoesNotExist:
			without[r.Key] = true
		}
	}
	if pod.Labels["app"] == "none" && g.chance(0.5) {
		pod.Labels["app"] = appValues[g.r.IntN(len(appValues))]
	}
	if _, ok := pod.Labels["tier"]; !ok && g.chance(0.3) {
		pod.Labels["tier"] = "front"
	}
	if !without["track"] && g.chance(0.2) {
		pod.Labels["track"] = "canary"
	}
	for k, v := range extra {
		pod.Labels[k] = v
	}
	return pod
}
