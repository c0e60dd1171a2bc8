package sidecarset

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// This file keeps each managed pod's entry in the upgrade-state annotation
// (sidecar.UpgradeStateAnnotation) equal to its state in the plan: an in-place upgrade writes it
// with the images; the other changes (waiting and why, updated, failed, not upgradable) are
// written by syncStates within a controller-wide rate, after the round's own writes, and only
// once the SidecarSet's rollout has upgraded no pod for stateQuiet, so that a rollout of
// thousands of pods is not slowed by them.

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
	return sidecar.UpgradeState{Revision: pp.Revision, State: string(pp.State), Reason: pp.Reason}
}

// upgradingState is the entry an in-place upgrade writes with the images: the pod's sidecars
// restart (or resize) from the SidecarSet's latest revision.
func upgradingState(ss *v1alpha1.SidecarSet, resize bool) sidecar.UpgradeState {
	reason := rollout.ReasonRestarting
	if resize {
		reason = rollout.ReasonResizing
	}
	return sidecar.UpgradeState{Revision: ss.Status.LatestRevision, State: string(v1alpha1.PodRolloutUpgrading), Reason: reason}
}

// syncStates writes the upgrade-state entries of the plan's pods that differ from the plan, but
// the pods written this round (skip) and those being recreated, as the rate allows. It returns
// whether some are left for a later round.
func (c *Controller) syncStates(ctx context.Context, ss *v1alpha1.SidecarSet, plan *rollout.Result, skip map[string]bool) bool {
	var due []*rollout.PodPlan
	left := false
	for i := range plan.Pods {
		pp := &plan.Pods[i]
		if skip[pp.Pod.Namespace+"/"+pp.Pod.Name] || pp.Reason == rollout.ReasonRecreating || pp.Pod.Deleting {
			continue
		}
		if cur, ok := pp.Pod.UpgradeState(ss.Name); ok && cur == podState(pp) {
			continue
		}
		if !c.stateWrites.TryAccept() {
			left = true
			break
		}
		due = append(due, pp)
	}
	workqueue.ParallelizeUntil(ctx, upgradeParallelism, len(due), func(i int) {
		want := podState(due[i])
		_, _ = c.writePod(ctx, due[i].Pod, func(p *corev1.Pod) (bool, error) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			return sidecar.SetUpgradeState(p.Annotations, ss.Name, want), nil
		}) // a failed write is retried by a later round: the state still differs
		// Rounds need not wait for the cache to show a state: planning does not read it, and a
		// state written twice is written once (the second write finds it and changes nothing).
		c.expect.forget(due[i].Pod.Namespace + "/" + due[i].Pod.Name)
	})
	return left
}
