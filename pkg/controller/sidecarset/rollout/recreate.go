package rollout

import (
	"fmt"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// RecreateAnnotation, set to "true" on a SidecarSet, has the controller evict the pods whose
// sidecars it cannot upgrade in place (a change of a field other than image and resources, or a
// resize the cluster cannot apply) and that a controller owns, through the Eviction API
// (PodDisruptionBudgets apply), so that their owners recreate them with the current sidecars. It
// is an annotation, as apps.kruise.io/repair-not-injected is, so that the SidecarSet stays
// OpenKruise's on the wire; without it such pods wait to be recreated by someone else, as in
// OpenKruise. The evictions follow the update strategy: upgrade order (priority, scatter),
// partition, paused, and maxUnavailable shared with the in-place upgrades; bare pods are never
// evicted.
const RecreateAnnotation = "apps.kruise.io/recreate-not-upgradable"

// ReasonRecreating: the pod is evicted this round so that its owner recreates it.
const ReasonRecreating = "Recreating"

// recreates chooses the pods to evict this round (Result.Recreate) among the pods the SidecarSet
// cannot upgrade in place, in upgrade order, within what the round's upgrades left of
// maxUnavailable (less the pods terminating and the evictions still in flight) and of the pods
// partition keeps, and marks the plans of those it chose and of those it leaves.
func (p *planner) recreates(res *Result, pods []*Pod, plans []PodPlan, used int32) []*Pod {
	if p.ss.Annotations[RecreateAnnotation] != "true" || p.blocked != "" || len(res.Reset) > 0 {
		return nil
	}
	var idx []int
	for i := range plans {
		if plans[i].State == v1alpha1.PodRolloutNotUpgradable {
			if plans[i].Message == "" {
				plans[i].Message = message(res, plans[i].Reason)
			}
			if pods[i].Owner() == "" {
				plans[i].Message += "; a pod without a controller is never recreated"
				continue
			}
			if p.opts.Deferred[pods[i].UID] {
				plans[i].Message += "; its last eviction was refused: tried again after a backoff"
				continue
			}
			idx = append(idx, i)
		}
	}
	idx = sortCandidates(&p.ss.Spec.UpdateStrategy, pods, idx)
	room := min(res.MaxUnavailable-used-res.Terminating-int32(p.opts.InFlightEvictions),
		res.Counts.Matched-res.Counts.Updated-res.Partition-int32(len(res.Upgrade)))
	var out []*Pod
	for _, i := range idx {
		if room <= 0 {
			plans[i].Message += fmt.Sprintf("; %s: recreated when maxUnavailable and partition allow", RecreateAnnotation)
			continue
		}
		room--
		out = append(out, pods[i])
		plans[i].State, plans[i].Reason = v1alpha1.PodRolloutUpgrading, ReasonRecreating
		plans[i].Message = "evicted so that its owner recreates it with the current sidecars (" + plans[i].Message + ")"
	}
	return out
}
