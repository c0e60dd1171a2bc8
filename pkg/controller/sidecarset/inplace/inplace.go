// Package inplace holds the pure pod mutations of an in-place sidecar upgrade (OpenKruise §5.8 and
// §5.9) and the pod condition that records whether a pod can be upgraded in place. The controller
// re-reads a pod, applies one of them and writes the pod back; the planner's tests apply the same
// functions to simulate whole rollouts.
//
// Invariants: the functions perform no I/O and read no clock (callers pass the time). Upgrade and
// Reset change only the pod they are given, which the caller owns: container images and SidecarSet
// annotations, nothing else of the spec. Both are idempotent: applied again to their own result,
// they change no container.
package inplace

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Upgrade upgrades the SidecarSet's sidecars in pod in place: only the images of changed
// containers and of changed native sidecars (initContainers with restartPolicy Always). It records
// each changed container's previous state in the in-place update state annotation, refreshes the
// SidecarSet's hash entry, adds the SidecarSet to the injected list, re-applies patchPodMetadata
// and returns the changed pod container names, sorted. A pod that already runs the SidecarSet's
// images only gets its hash entry refreshed.
//
// ready reports, for a pod container, whether it is ready and runs what its spec says as the pod
// stood before the call (rollout.ReadyAndUpgraded): it chooses the twin of a hot-upgrade sidecar.
func Upgrade(pod *corev1.Pod, ss *v1alpha1.SidecarSet, now time.Time, ready func(container string) bool) ([]string, error) {
	before := map[string]sidecar.InPlaceUpdateContainerStatus{}
	snapshot := pod.DeepCopy() // statuses and images as they were, for the records
	var changed []string
	for sc := range sidecar.RunningContainers(ss.Spec.Containers, ss.Spec.InitContainers) {
		if c := sidecar.UpgradeContainer(pod, sc, ss.ResourceVersion, ready); c != "" {
			changed = append(changed, c)
			before[c] = sidecar.StatusBefore(snapshot, c)
		}
	}
	sort.Strings(changed)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	entry := sidecar.NewHashEntry(ss.Name, ss.Annotations[sidecar.HashAnnotation], ss.Status.LatestRevision,
		sidecar.SidecarList(ss.Spec.Containers, ss.Spec.InitContainers), now)
	if err := sidecar.SetHashEntry(pod.Annotations, sidecar.HashAnnotation, entry); err != nil {
		return nil, err
	}
	if len(changed) > 0 {
		sidecar.RecordInPlaceUpdate(pod.Annotations, ss.Name, entry.Hash, now, changed, before)
	}
	if list := pod.Annotations[sidecar.InjectedListAnnotation]; !sidecar.InjectedListHas(list, ss.Name) {
		pod.Annotations[sidecar.InjectedListAnnotation] = sidecar.RenderInjectedList(append(sidecar.ParseInjectedList(list), ss.Name))
	}
	patched, _, err := sidecar.PatchPodMetadata(pod.Annotations, ss.Spec.PatchPodMetadata)
	if err != nil {
		return nil, fmt.Errorf("patchPodMetadata of SidecarSet %s: %w", ss.Name, err)
	}
	pod.Annotations = patched
	return changed, nil
}

// Reset performs the hot-upgrade reset step in pod: every hot-upgrade sidecar's idle twin gets
// the empty image. It records the reset twins' previous state and returns their names, sorted.
func Reset(pod *corev1.Pod, ss *v1alpha1.SidecarSet, now time.Time) []string {
	snapshot := pod.DeepCopy()
	before := map[string]sidecar.InPlaceUpdateContainerStatus{}
	var reset []string
	for sc := range sidecar.RunningContainers(ss.Spec.Containers, ss.Spec.InitContainers) {
		if !sidecar.IsHotUpgrade(sc) {
			continue
		}
		if c := sidecar.ResetIdleTwin(pod, sc); c != "" {
			reset = append(reset, c)
			before[c] = sidecar.StatusBefore(snapshot, c)
		}
	}
	if len(reset) == 0 {
		return nil
	}
	sort.Strings(reset)
	if entry, ok := sidecar.PodHashEntry(pod.Annotations, sidecar.HashAnnotation, ss.Name); ok {
		sidecar.RecordInPlaceUpdate(pod.Annotations, ss.Name, entry.Hash, now, reset, before)
	}
	return reset
}

// UpgradableCondition returns the pod's SidecarSetUpgradable condition after recording whether
// the SidecarSet can upgrade it in place, and whether it differs from current (the pod's
// condition, nil when it has none). The message is OpenKruise's JSON object of SidecarSet name to
// bool, kept across SidecarSets; the condition is True (reason AllSidecarsetUpgradable) iff every
// recorded value is true.
func UpgradableCondition(current *corev1.PodCondition, sidecarSetName string, upgradable bool, now time.Time) (corev1.PodCondition, bool) {
	values := map[string]bool{}
	if current != nil {
		_ = json.Unmarshal([]byte(current.Message), &values) // a foreign message starts over
	}
	values[sidecarSetName] = upgradable
	all := true
	for _, v := range values {
		all = all && v
	}
	msg, _ := json.Marshal(values) // map keys are sorted
	cond := corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionTrue,
		Reason: sidecar.UpgradableReason, Message: string(msg), LastTransitionTime: metav1.NewTime(now)}
	if !all {
		cond.Status, cond.Reason = corev1.ConditionFalse, sidecar.NotUpgradableReason
	}
	if current == nil {
		return cond, true
	}
	if current.Status == cond.Status {
		cond.LastTransitionTime = current.LastTransitionTime
	}
	same := current.Status == cond.Status && current.Reason == cond.Reason && current.Message == cond.Message
	return cond, !same
}

// RecordsVerdict reports whether message, the message of a pod's SidecarSetUpgradable
// condition, records a verdict (true or false) of the SidecarSet named sidecarSetName.
func RecordsVerdict(message, sidecarSetName string) bool {
	values := map[string]bool{}
	if json.Unmarshal([]byte(message), &values) != nil {
		return false
	}
	_, ok := values[sidecarSetName]
	return ok
}

// Resize sets the resources of the SidecarSet's sidecars in pod to what the current spec gives
// them (their resources, or what their resourcesPolicy derives from the pod's own containers, as
// injection renders them) and returns the changed pod container names, in pod order. The pod is
// then written through the pod resize subresource, which takes nothing else. It fails when
// kube-apiserver would refuse the change (sidecar.ResizeRefusal).
func Resize(pod *corev1.Pod, ss *v1alpha1.SidecarSet) ([]string, error) {
	apps := sidecar.OwnContainers(pod.Spec.Containers, pod.Spec.InitContainers)
	targets, err := sidecar.ResizeTargets(ss, apps, sidecar.EvaluateResourceExpr)
	if err != nil {
		return nil, err
	}
	if why := sidecar.ResizeRefusal(pod.Spec.Containers, pod.Spec.InitContainers, targets); why != "" {
		return nil, fmt.Errorf("cannot resize in place: %s", why)
	}
	changed := sidecar.ResizeChanges(pod.Spec.Containers, pod.Spec.InitContainers, targets)
	for _, name := range changed {
		c := sidecar.FindPodContainer(pod, name)
		c.Resources = corev1.ResourceRequirements{}
		t := targets[name]
		t.DeepCopyInto(&c.Resources)
	}
	return changed, nil
}
