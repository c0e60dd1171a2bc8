package injection

import (
	"errors"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Inject injects the matching SidecarSets into a pod being created. See the package
// documentation for the algorithm and its invariants. On error, the Result still carries the
// decisions made so far, and no patch.
func Inject(in Input) (Result, error) {
	if in.Pod == nil {
		return Result{}, errors.New("injection: no pod")
	}
	res := Result{Pod: in.Pod}
	if !apps.PodActive(in.Pod.Status.Phase, in.Pod.DeletionTimestamp != nil) {
		return res, nil
	}
	if in.Options.Evaluator == nil {
		in.Options.Evaluator = sidecar.EvaluateResourceExpr
	}
	views, present, decisions, err := selectViews(&in)
	res.Decisions = decisions
	if err != nil {
		return res, err
	}
	bases, canaries, present := overriddenPresent(views, present)
	stale, err := staleRetired(in.Pod, in.Retired, res.Decisions)
	if err != nil {
		return res, err
	}
	sharing, present := sharingNames(stale, present)
	if len(views) == 0 && len(bases) == 0 && len(stale) == 0 {
		return res, nil
	}
	pod := in.Pod.DeepCopy()
	for _, ss := range stale {
		if err := withdraw(pod, ss); err != nil {
			return res, err
		}
	}
	if len(bases) > 0 || len(sharing) > 0 {
		if views, err = withdrawBases(pod, views, bases, append(canaries, sharing...), &in, res.Decisions); err != nil {
			return res, err
		}
	}
	views, res.Warnings, err = withoutShadowed(views, present, res.Decisions)
	if err != nil {
		return res, err
	}
	if len(views) == 0 && len(bases) == 0 {
		res.Patch = diff(in.Pod, pod)
		if len(res.Patch) > 0 {
			res.Pod = pod
		}
		return res, nil
	}
	for i := range views {
		annotations, _, err := sidecar.PatchPodMetadata(pod.Annotations, views[i].patchPodMetadata)
		if err != nil {
			return res, newError(views[i].ss.Name, "spec.patchPodMetadata", err)
		}
		pod.Annotations = annotations
	}
	b, err := build(pod, views, present, &in)
	if err != nil {
		return res, err
	}
	for i := range res.Decisions {
		if d := &res.Decisions[i]; d.Matched && d.Reason != ReasonOverriddenByCanary {
			d.Injected = b.injected[d.SidecarSet]
		}
	}
	if b.any {
		b.apply(pod, in.Options.SortSidecarContainersByName)
		res.Warnings = append(res.Warnings, b.warnings...)
	}
	res.Patch = diff(in.Pod, pod)
	if len(res.Patch) > 0 {
		res.Pod = pod
	}
	return res, nil
}

// withdrawBases takes the canary bases and the present SidecarSets to inject again (the canaries
// that name them, see overriddenPresent, and those that share names with a stale version, see
// sharingNames) out of pod and returns views with the latter added, in name order.
func withdrawBases(pod *corev1.Pod, views []view, bases, canaries []*v1alpha1.SidecarSet, in *Input, decisions []Decision) ([]view, error) {
	for _, ss := range append(append([]*v1alpha1.SidecarSet(nil), bases...), canaries...) {
		if err := withdraw(pod, ss); err != nil {
			return nil, err
		}
	}
	for i := range decisions {
		for _, ss := range bases {
			if d := &decisions[i]; d.SidecarSet == ss.Name {
				d.Matched, d.Reason = true, ReasonOverriddenByCanary
			}
		}
	}
	for _, ss := range canaries {
		v, err := chooseVersion(ss, in.Pod, in)
		if err != nil {
			return nil, err
		}
		for i := range decisions {
			if d := &decisions[i]; d.SidecarSet == ss.Name {
				d.Matched, d.Latest, d.Revision, d.Hash, d.Reason = true, v.latest, v.controllerRevision, v.hash, v.reason
			}
		}
		views = append(views, v)
	}
	sort.SliceStable(views, func(i, j int) bool { return views[i].ss.Name < views[j].ss.Name })
	return views, nil
}

// namespaceOf returns the namespace to match and its labels, with kubernetes.io/metadata.name
// filled in when absent.
func namespaceOf(in *Input) (string, map[string]string) {
	ns := in.Namespace
	if ns == "" {
		ns = in.Pod.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	return ns, apps.NamespaceLabels(ns, in.NamespaceLabels)
}

// selectViews matches the candidates in name order, chooses each one's version and applies the
// canary overrides. It returns the views to inject, the matching SidecarSets already injected
// (Options.SkipInjected) and one decision per candidate.
func selectViews(in *Input) ([]view, []*v1alpha1.SidecarSet, []Decision, error) {
	sets := make([]*v1alpha1.SidecarSet, 0, len(in.SidecarSets))
	for _, ss := range in.SidecarSets {
		if ss != nil {
			sets = append(sets, ss)
		}
	}
	sort.SliceStable(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })

	ns, nsLabels := namespaceOf(in)
	decisions := make([]Decision, len(sets))
	views := make([]view, 0, len(sets))
	var present []*v1alpha1.SidecarSet
	for i, ss := range sets {
		d := &decisions[i]
		d.SidecarSet = ss.Name
		if i > 0 && sets[i-1].Name == ss.Name {
			d.Reason = ReasonDuplicate
			continue
		}
		reason, err := match(ss, ns, nsLabels, in.Pod.Labels)
		if err != nil {
			return nil, nil, decisions, err
		}
		if reason != "" {
			d.Reason = reason
			continue
		}
		if in.Options.SkipInjected && alreadyInjected(in.Pod, ss) {
			d.Reason = ReasonAlreadyInjected
			present = append(present, ss)
			continue
		}
		v, err := chooseVersion(ss, in.Pod, in)
		if err != nil {
			return nil, nil, decisions, err
		}
		d.Matched, d.Latest, d.Revision, d.Hash, d.Reason = true, v.latest, v.controllerRevision, v.hash, v.reason
		views = append(views, v)
	}
	return withoutCanaryBases(views, present, decisions), present, decisions, nil
}

// alreadyInjected reports whether the pod's injected-list names ss and the pod carries ss's
// current spec: its hash entry has ss's hash, or ss injected nothing (no entry). A pod injected
// with an older spec (a policy kube-apiserver has not reloaded yet) is injected again.
func alreadyInjected(pod *corev1.Pod, ss *v1alpha1.SidecarSet) bool {
	if !sidecar.InjectedListHas(pod.Annotations[sidecar.InjectedListAnnotation], ss.Name) {
		return false
	}
	hashes, err := sidecar.ParseHashMap(pod.Annotations[sidecar.HashAnnotation])
	if err != nil {
		return false
	}
	e, ok := hashes[ss.Name]
	return !ok || e.Hash == ss.Annotations[sidecar.HashAnnotation]
}

// match returns "" when ss applies to the pod, else why not.
func match(ss *v1alpha1.SidecarSet, ns string, nsLabels, podLabels map[string]string) (Reason, error) {
	if ss.Spec.InjectionStrategy.Paused {
		return ReasonInjectionPaused, nil
	}
	if ok, err := matchNamespace(ss, ns, nsLabels); err != nil || !ok {
		return ReasonNamespaceMismatch, err
	}
	if ok, err := matchPod(ss, podLabels); err != nil || !ok {
		return ReasonSelectorMismatch, err
	}
	return "", nil
}

// withoutCanaryBases removes the SidecarSets named as base by a matching canary (§4.4), to inject
// or injected earlier in the admission (a reinvocation must not bring the base back).
func withoutCanaryBases(views []view, present []*v1alpha1.SidecarSet, decisions []Decision) []view {
	var bases map[string]bool
	mark := func(a map[string]string) {
		if base, ok := apps.CanaryBase(a); ok {
			if bases == nil {
				bases = map[string]bool{}
			}
			bases[base] = true
		}
	}
	for i := range views {
		mark(views[i].ss.Annotations)
	}
	for _, ss := range present {
		mark(ss.Annotations)
	}
	if bases == nil {
		return views
	}
	out := views[:0]
	for _, v := range views {
		if !bases[v.ss.Name] {
			out = append(out, v)
		}
	}
	for i := range decisions {
		if d := &decisions[i]; d.Matched && bases[d.SidecarSet] {
			d.Reason = ReasonOverriddenByCanary
		}
	}
	return out
}
