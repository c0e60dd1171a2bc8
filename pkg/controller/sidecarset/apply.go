package sidecarset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/metric"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// podFailure is a pod a round could not write, and what it tried.
type podFailure struct {
	pod    *rollout.Pod
	action string
	err    error
}

// Actions of a podFailure.
const (
	actionMarkNotUpgradable = "mark-not-upgradable"
	actionReset             = "reset"
	actionUpgrade           = "upgrade"
	actionResize            = "resize"
	actionMarkUpgradable    = "mark-upgradable"
	actionEvict             = "evict"
)

// applied is what a round did to its pods.
type applied struct {
	written []*corev1.Pod   // the pods it wrote, as written
	failed  []podFailure    // the pods it could not write
	left    []*rollout.Pod  // the pods it left to a later round (upgrade)
	events  []event.Pending // to record once the status is written
	// more: the plan took more pods than a round writes (maxUpgradesPerRound); the next round,
	// soon, takes the rest.
	more bool
}

// apply carries out a planned round: not-upgradable conditions, hot-upgrade resets, then in-place
// upgrades. A pod that cannot be written is skipped and returned among the failures: the others
// go on within the budget.
func (c *Controller) apply(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result) applied {
	var out applied
	for _, pod := range plan.NotUpgradable {
		if err := c.setUpgradable(ctx, pod, pod.Upgradable(), ss.Name, false, false); err != nil {
			out.failed = append(out.failed, podFailure{pod, actionMarkNotUpgradable, err})
		}
	}
	for _, pod := range plan.Reset {
		w, err := c.writePod(ctx, pod, func(p *corev1.Pod) (bool, error) {
			return len(inplace.Reset(p, ss, c.clock.Now())) > 0, nil
		})
		switch {
		case err != nil:
			klog.ErrorS(err, "resetting hot-upgrade sidecar", "pod", klog.KRef(pod.Namespace, pod.Name))
			out.events = append(out.events, event.Warning(pod.Ref(), "ResetContainerFailed",
				fmt.Sprintf("reset sidecar container image empty failed: %v", err)))
			out.failed = append(out.failed, podFailure{pod, actionReset, err})
		case w != nil:
			out.events = append(out.events, event.Normal(pod.Ref(), "ResetContainerSucceed",
				"reset sidecar container image empty successfully"))
			out.written = append(out.written, w)
		}
	}
	upgraded, failed, left, more := c.upgrade(ctx, ss, plan)
	out.more = more
	out.written = append(out.written, upgraded...)
	out.failed = append(out.failed, failed...)
	out.left = left
	return out
}

// upgradeParallelism is how many pods of a round are upgraded at once: a round may take a whole
// maxUnavailable budget (hundreds of pods), and each upgrade is a few requests. readyNow reads
// as many pods at once.
const upgradeParallelism = 16

// maxUpgradesPerRound is how many pods a round upgrades at most, in the plan's order; the rest
// of what the plan took waits for the next round, which the SidecarSet takes again at once behind
// the others in the queue. The workers and the client's request rate are shared by every
// SidecarSet: a NamespacedSidecarSet of a namespace with thousands of pods at a maxUnavailable of
// 100% would otherwise hold a worker, and most of the rate, for a minute (two requests a pod at
// --kube-api-qps 100), while other namespaces' rounds wait. A prefix of a plan's upgrades is
// always within its budget.
const maxUpgradesPerRound = 128

// upgrade upgrades the plan's pods in place, several at once, and marks them upgradable: first
// the resources of those in resize through the pod resize subresource, then images and
// annotations. The SidecarSetUpgradable condition of a pod whose images changed and whose
// condition holds no verdict of the SidecarSet yet is written later, once the rollout is quiet
// (syncUpgradable): it only adds "upgradable" to what the pod shows, and each such status write
// would take kube-apiserver's time from the upgrades; a verdict that changes (a not-upgradable
// pod upgraded after all) is written at once. A pod whose resize failed keeps its old hash
// entry: the next round resizes it again. A pod the plan took without the budget and that reads ready at the write (readyAtWrite)
// is left alone, with a resize not yet written: the next round counts it against
// maxUnavailable. It returns the pods it wrote, those it could not, and those it left.
func (c *Controller) upgrade(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result) ([]*corev1.Pod, []podFailure, []*rollout.Pod, bool) {
	more := len(plan.Upgrade) > maxUpgradesPerRound
	pods, resize := plan.Upgrade[:min(len(plan.Upgrade), maxUpgradesPerRound)], plan.Resize
	readyForSidecar := rollout.ReadyForSidecar(ss)
	written := make([]*corev1.Pod, len(pods))
	failures := make([]*podFailure, len(pods))
	left := make([]*rollout.Pod, len(pods))
	workqueue.ParallelizeUntil(ctx, upgradeParallelism, len(pods), func(i int) {
		pod := pods[i]
		leave := false // set by each read of the pod, the last one deciding
		guard := func(p *corev1.Pod) bool {
			leave = plan.Unbudgeted[pod] && readyAtWrite(ss, p, readyForSidecar)
			return leave
		}
		if resize[pod] {
			if _, err := c.writePod(ctx, pod, func(p *corev1.Pod) (bool, error) {
				if guard(p) {
					return false, nil
				}
				changed, err := inplace.Resize(p, ss)
				return len(changed) > 0, err
			}, "resize"); err != nil {
				if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) { // the node cannot fit it: stop here
					c.backoffs.Refuse(ss, pod, rollout.BackoffResize, errorMessage(err))
				}
				c.deferWrite(ss, pod, err)
				failures[i] = &podFailure{pod, actionResize, err}
				return
			}
			if leave {
				left[i] = pod
				return
			}
		}
		var images []string // the containers whose images the last read's upgrade changed
		w, err := c.writePod(ctx, pod, func(p *corev1.Pod) (bool, error) {
			if guard(p) {
				return false, nil
			}
			before := rollout.NewPod(p) // as read, before the upgrade changes its sidecars
			changed, err := inplace.Upgrade(p, ss, c.clock.Now(), rollout.ReadyAndUpgraded(before, ss.Name))
			if err != nil {
				return false, err
			}
			images = changed
			sidecar.SetUpgradeState(p.Annotations, ss.Name, upgradingState(ss, resize[pod], !readyForSidecar(before)))
			return true, nil
		})
		if err != nil {
			c.deferWrite(ss, pod, err)
			failures[i] = &podFailure{pod, actionUpgrade, err}
			return
		}
		c.backoffs.Reset(ss, pod.UID, rollout.BackoffUpgrade)
		if leave {
			left[i] = pod
			return
		}
		if w == nil {
			return
		}
		written[i] = w
		c.metrics.Upgraded(ss.Name, w)
		current := upgradableCondition(w)
		if len(images) > 0 && (current == nil || !inplace.RecordsVerdict(current.Message, ss.Name)) {
			return // a first verdict waits until the rollout is quiet (syncUpgradable)
		}
		if err := c.setUpgradable(ctx, rollout.NewPod(w), current, ss.Name, true, false); err != nil {
			failures[i] = &podFailure{pod, actionMarkUpgradable, err}
		}
	})
	out := slices.DeleteFunc(written, func(w *corev1.Pod) bool { return w == nil })
	var failed []podFailure
	for _, f := range failures {
		if f != nil {
			failed = append(failed, *f)
		}
	}
	return out, failed, slices.DeleteFunc(left, func(p *rollout.Pod) bool { return p == nil }), more
}

// deferWrite starts or doubles the backoff of a pod whose upgrade kube-apiserver refused (not a
// conflict, nor a write whose outcome is unknown: the cache settles those).
func (c *Controller) deferWrite(ss *v1alpha1.SidecarSet, p *rollout.Pod, err error) {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) || ambiguous(err) || notConnected(err) {
		return
	}
	c.backoffs.Refuse(ss, p, rollout.BackoffUpgrade, errorMessage(err))
}

// reportFailures publishes the pods a round could not write (the metric
// sidecarset_pod_write_errors_total) and returns an event on each. Evictions the server may not
// make (403: its ClusterRole lacks pods/eviction, the chart's rbac.evictions=false) also give one
// event on the SidecarSet, EvictionForbidden: the repair or recreate it asks for cannot happen
// until the role allows it.
func (c *Controller) reportFailures(ss *v1alpha1.SidecarSet, failed []podFailure) []event.Pending {
	var events []event.Pending
	var forbidden *podFailure
	for i, f := range failed {
		metric.WriteFailed(ss.Name, f.action)
		klog.ErrorS(f.err, "skipping a pod this round", "sidecarset", ss.Name, "pod", klog.KRef(f.pod.Namespace, f.pod.Name), "action", f.action)
		events = append(events, event.Warning(f.pod.Ref(), "SidecarSetPodWriteFailed",
			fmt.Sprintf("SidecarSet %s could not %s this pod (the other pods go on; retried): %v", ss.Name, f.action, f.err)))
		if f.action == actionEvict && apierrors.IsForbidden(f.err) && forbidden == nil {
			forbidden = &failed[i]
		}
	}
	if forbidden != nil {
		events = append(events, event.Warning(ss, ReasonEvictionForbidden,
			fmt.Sprintf("the server may not evict pods, which this SidecarSet's repair or recreate needs: grant pods/eviction create "+
				"to its ServiceAccount (Helm value rbac.evictions=true) or remove the annotation asking for it; retried with a backoff: %v", forbidden.err)))
	}
	return events
}

// ReasonEvictionForbidden is the reason of the SidecarSet event telling that the server's
// ServiceAccount may not evict the pods its repair or recreate chose.
const ReasonEvictionForbidden = "EvictionForbidden"

// writePod reads the pod the cache shows, applies mutate and patches what mutate changed, guarded
// by the resourceVersion it read, retrying on conflicts: the cache keeps only what planning reads.
// The first read asks for the pod at least as new as the cache shows it, which kube-apiserver
// answers from its watch cache (no etcd read); a conflict reads the newest.
// Only the changed fields are sent, so pod fields this client does not know (a newer cluster's)
// are never erased. It returns the written pod, or nil when mutate changed nothing or the pod is
// gone or was replaced. The next rounds wait for the cache to show the write (expectations), also
// when it failed in a way that may have applied it.
//
// subresources names the subresource written ("resize"), none for the pod itself.
func (c *Controller) writePod(ctx context.Context, cached *rollout.Pod, mutate func(*corev1.Pod) (bool, error), subresources ...string) (*corev1.Pod, error) {
	pods := c.kube.CoreV1().Pods(cached.Namespace)
	key := cached.Namespace + "/" + cached.Name
	var written *corev1.Pod
	var based string // the resourceVersion the last patch sent was based on
	read := metav1.GetOptions{ResourceVersion: cached.ResourceVersion}
	err := retryOnConflict(retry.DefaultBackoff, func() error {
		based = ""
		pod, err := pods.Get(ctx, cached.Name, read)
		read = metav1.GetOptions{} // after a conflict, the newest pod
		if err != nil {
			return err
		}
		if pod.UID != cached.UID || pod.DeletionTimestamp != nil {
			return nil
		}
		before := pod.DeepCopy()
		changed, err := mutate(pod)
		if err != nil || !changed {
			return err
		}
		patch, err := ownedPatch(before, pod)
		if err != nil {
			return err
		}
		based = before.ResourceVersion
		written, err = pods.Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, subresources...)
		return err
	})
	switch {
	case err == nil && written != nil:
		c.expect.written(key, written.ResourceVersion)
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil && based != "" && ambiguous(err):
		c.expect.maybeWritten(key, based)
	}
	if err != nil {
		return nil, err
	}
	return written, nil
}

// readyNow reads again the pods that plan takes without maxUnavailable because the pod cache
// shows them not ready, when it also takes pods against the budget, and returns those that are
// ready (rollout.ReadyForSidecar). The cache may not show yet what their kubelets wrote: such a
// pod counts against the budget and has its place in the order among the ready ones, so the round
// plans again with them. When the plan takes no pod against the budget, a pod that became ready
// is only to be left, which its write does (readyAtWrite), without this read. A pod that cannot
// be read is left to its write too.
func (c *Controller) readyNow(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result) []*corev1.Pod {
	if len(plan.Unbudgeted) == len(plan.Upgrade) {
		return nil
	}
	var unbudgeted []*rollout.Pod
	for _, p := range plan.Upgrade {
		if plan.Unbudgeted[p] {
			unbudgeted = append(unbudgeted, p)
		}
	}
	ready := rollout.ReadyForSidecar(ss)
	found := make([]*corev1.Pod, len(unbudgeted))
	workqueue.ParallelizeUntil(ctx, upgradeParallelism, len(unbudgeted), func(i int) {
		cached := unbudgeted[i]
		p, err := c.kube.CoreV1().Pods(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
		if err == nil && p.UID == cached.UID && ready(rollout.NewPod(p)) {
			found[i] = p
		}
	})
	return slices.DeleteFunc(found, func(p *corev1.Pod) bool { return p == nil })
}

// readyAtWrite reports whether pod, as a write read it, is ready for ss's sidecars (ready),
// though the plan took it without the budget. That read decides: the patch carries its
// resourceVersion, so a pod that becomes ready after it makes the patch conflict, and the write
// reads it again.
func readyAtWrite(ss *v1alpha1.SidecarSet, pod *corev1.Pod, ready func(*rollout.Pod) bool) bool {
	if !ready(rollout.NewPod(pod)) {
		return false
	}
	klog.V(2).InfoS("leaving a pod that became ready since the plan to the next round, which counts it against maxUnavailable",
		"sidecarset", ss.Name, "pod", klog.KObj(pod))
	return true
}

// setUpgradable records in the pod's SidecarSetUpgradable condition whether the SidecarSet can
// upgrade it in place. It writes nothing when current (the condition as last seen, nil when
// none) already says so; otherwise it writes the condition as read at the write, guarded by its
// resourceVersion, so that another SidecarSet's verdict written meanwhile is not lost. keep
// keeps a verdict of the SidecarSet found at the write.
func (c *Controller) setUpgradable(ctx context.Context, pod *rollout.Pod, current *corev1.PodCondition, sidecarSetName string, upgradable, keep bool) error {
	if _, changed := inplace.UpgradableCondition(current, sidecarSetName, upgradable, c.clock.Now()); !changed {
		return nil
	}
	_, err := c.writePod(ctx, pod, func(p *corev1.Pod) (bool, error) {
		now := upgradableCondition(p)
		if keep && now != nil && inplace.RecordsVerdict(now.Message, sidecarSetName) {
			return false, nil
		}
		cond, changed := inplace.UpgradableCondition(now, sidecarSetName, upgradable, c.clock.Now())
		if changed {
			setPodCondition(p, cond)
		}
		return changed, nil
	}, "status")
	return err
}

// ownedPatch is the strategic merge patch from before to after, with before's resourceVersion as a
// precondition (a pod changed meanwhile answers Conflict).
func ownedPatch(before, after *corev1.Pod) ([]byte, error) {
	original, err := json.Marshal(before)
	if err != nil {
		return nil, err
	}
	modified, err := json.Marshal(after)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(original, modified, corev1.Pod{})
	if err != nil {
		return nil, err
	}
	var m map[string]interface{}
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]interface{})
	if meta == nil {
		meta = map[string]interface{}{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = before.ResourceVersion
	return json.Marshal(m)
}

// upgradableCondition returns the pod's SidecarSetUpgradable condition, or nil.
func upgradableCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == sidecar.UpgradableCondition {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// errorMessage is the message of an API error, the error's text otherwise.
func errorMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// setPodCondition replaces the pod's condition of cond's type, or adds it.
func setPodCondition(pod *corev1.Pod, cond corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == cond.Type {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}
