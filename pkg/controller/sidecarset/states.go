package sidecarset

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// This file keeps each managed pod's entry in the upgrade-state annotation
// (sidecar.UpgradeStateAnnotation) equal to its state in the plan: an in-place upgrade writes it
// with the images; the other changes (waiting and why, updated, failed, not upgradable) are
// written by syncStates within a controller-wide rate, after the round's own writes, and only
// once the SidecarSet's rollout has upgraded no pod for stateQuiet, so that a rollout of
// thousands of pods is not slowed by them. The first SidecarSetUpgradable verdict of the pods an
// upgrade changed waits the same way (syncUpgradable).

// stateWritesPerSecond and stateWritesBurst bound the writes of upgrade states alone.
const (
	stateWritesPerSecond = 20
	stateWritesBurst     = 40
)

// stateQuiet is how long a SidecarSet's rounds upgrade no pod before the states its rollout
// changed are written (it is done, paused, stalled, or waiting on slow pods). While it upgrades
// pods, each state write (a pod read and patch) would take kube-apiserver's time from the
// upgrades, and most would be overwritten within seconds: a pod waiting for its turn is upgraded
// next; one upgrading is updated a restart later. The pods being upgraded carry their state at
// once, written with their new sidecars.
const stateQuiet = 3 * time.Second

// podState is the upgrade-state entry the plan gives a pod.
func podState(pp *rollout.PodPlan) sidecar.UpgradeState {
	return sidecar.UpgradeState{Revision: pp.Revision, State: string(pp.State), Reason: pp.Reason, NotReadyBefore: pp.NotReadyBefore}
}

// dropsNotReadyBefore accepts the entries whose notReadyBefore mark the plan drops (the pod has
// been available since its upgrade): written even while the rollout upgrades pods, since the mark
// left on a pod that fails later would keep it from holding its place of maxUnavailable.
func dropsNotReadyBefore(cur, want sidecar.UpgradeState) bool {
	return cur.NotReadyBefore && !want.NotReadyBefore
}

// upgradingState is the entry an in-place upgrade writes with the images: the pod's sidecars
// restart (or resize) from the SidecarSet's latest revision; notReady when the pod, as the write
// read it, was not ready for its sidecars (it then holds no place of maxUnavailable).
func upgradingState(ss *v1alpha1.SidecarSet, resize, notReady bool) sidecar.UpgradeState {
	reason := rollout.ReasonRestarting
	if resize {
		reason = rollout.ReasonResizing
	}
	return sidecar.UpgradeState{Revision: ss.Status.LatestRevision, State: string(v1alpha1.PodRolloutUpgrading), Reason: reason, NotReadyBefore: notReady}
}

// syncStates writes the upgrade-state entries of the plan's pods that differ from the plan, but
// the pods written this round (skip) and those being recreated, as the rate allows, the
// namespaces taking turns. It returns whether some are left for a later round: beyond the rate,
// or not written. only, when set, limits the writes to the entries it accepts (the current one,
// as the pod shows it, and the plan's).
func (c *Controller) syncStates(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result, skip map[string]bool,
	only func(cur, want sidecar.UpgradeState) bool) bool {
	var pending []*rollout.PodPlan
	for i := range plan.Pods {
		pp := &plan.Pods[i]
		if skip[pp.Pod.Namespace+"/"+pp.Pod.Name] || pp.Reason == rollout.ReasonRecreating || pp.Pod.Deleting {
			continue
		}
		cur, ok := pp.Pod.UpgradeState(ss.Name)
		if (ok && cur == podState(pp)) || (only != nil && !only(cur, podState(pp))) {
			continue
		}
		pending = append(pending, pp)
	}
	pending = byNamespaceTurns(pending, func(pp *rollout.PodPlan) string { return pp.Pod.Namespace })
	due := pending[:accepted(c.stateWrites, len(pending))]
	left := len(due) < len(pending)
	failed := make([]bool, len(due))
	workqueue.ParallelizeUntil(ctx, upgradeParallelism, len(due), func(i int) {
		want := podState(due[i])
		_, err := c.writePod(ctx, due[i].Pod, func(p *corev1.Pod) (bool, error) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			return sidecar.SetUpgradeState(p.Annotations, ss.Name, want), nil
		})
		failed[i] = err != nil // retried by a later round: the state still differs
		// Rounds need not wait for the cache to show a state: planning does not read it, and a
		// state written twice is written once (the second write finds it and changes nothing).
		c.expect.forget(due[i].Pod.Namespace + "/" + due[i].Pod.Name)
	})
	return left || slices.Contains(failed, true)
}

// verdictWritesPerSecond and verdictWritesBurst bound the writes of first SidecarSetUpgradable
// verdicts (syncUpgradable): after a rollout of 1,000 pods they are written in about 10 s, before
// the upgrade states (OpenKruise's users read the verdict; the states are this server's own).
const (
	verdictWritesPerSecond = 100
	verdictWritesBurst     = 200
)

// pendingUpgradable returns the plan's pods that the SidecarSet named name upgraded in place and
// whose SidecarSetUpgradable condition holds no verdict of it yet (upgrade leaves that verdict
// to a quiet rollout), but those in skip (written this round), being deleted, or that it can no
// longer upgrade in place (their verdict, false, is the round's own). The pods of each namespace
// take turns (byNamespaceTurns), so that the pods of one namespace never hold back another's.
func pendingUpgradable(name string, plan *rollout.Result, skip map[string]bool) []*rollout.Pod {
	var due []*rollout.Pod
	recorded := map[string]bool{} // by message: the pods of a rollout mostly share one
	for i := range plan.Pods {
		pp := &plan.Pods[i]
		p := pp.Pod
		if skip[p.Namespace+"/"+p.Name] || p.Deleting || pp.State == v1alpha1.PodRolloutNotUpgradable || !p.UpgradedInPlaceBy(name) {
			continue
		}
		msg := p.UpgradableMessage()
		has, ok := recorded[msg]
		if !ok {
			has = inplace.RecordsVerdict(msg, name)
			recorded[msg] = has
		}
		if !has {
			due = append(due, p)
		}
	}
	return byNamespaceTurns(due, func(p *rollout.Pod) string { return p.Namespace })
}

// byNamespaceTurns orders items so that namespaces (namespace gives an item's) take turns, one
// item each, in the order they first appear; each namespace's items keep their order.
func byNamespaceTurns[T any](items []T, namespace func(T) string) []T {
	var order []string
	queues := map[string][]T{}
	for _, it := range items {
		ns := namespace(it)
		if _, ok := queues[ns]; !ok {
			order = append(order, ns)
		}
		queues[ns] = append(queues[ns], it)
	}
	if len(order) < 2 {
		return items
	}
	out := make([]T, 0, len(items))
	for len(out) < len(items) {
		for _, ns := range order {
			if q := queues[ns]; len(q) > 0 {
				out, queues[ns] = append(out, q[0]), q[1:]
			}
		}
	}
	return out
}

// syncUpgradable writes the pending SidecarSetUpgradable verdicts (pendingUpgradable), true, as
// verdictWrites allows, each on the pod as read at its write, with its resourceVersion: a
// verdict recorded meanwhile (another round's false) is kept, and another SidecarSet's is not
// lost. It returns whether some are left for a later round: beyond the rate, or not written.
func (c *Controller) syncUpgradable(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result, skip map[string]bool) bool {
	pending := pendingUpgradable(ss.Name, plan, skip)
	due := pending[:accepted(c.verdictWrites, len(pending))]
	failed := make([]bool, len(due))
	workqueue.ParallelizeUntil(ctx, upgradeParallelism, len(due), func(i int) {
		err := c.setUpgradable(ctx, due[i], due[i].Upgradable(), ss.Name, true, true)
		failed[i] = err != nil
		// A round on a cache that does not show the verdict yet finds it at the write's read
		// and writes nothing: no round waits for the cache.
		c.expect.forget(due[i].Namespace + "/" + due[i].Name)
	})
	return len(due) < len(pending) || slices.Contains(failed, true)
}

// accepted takes up to n tokens of limiter, while it has them, and returns how many it took.
func accepted(limiter flowcontrol.RateLimiter, n int) int {
	for i := range n {
		if !limiter.TryAccept() {
			return i
		}
	}
	return n
}
