package view

import (
	"context"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/podcache"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/pull"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/resize"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// Rollout computes the GET sidecarsets/<name>/rollout view from the pod caches with the same
// planner the controller uses, so the view says exactly what the next round would do. Every
// replica serves it, leader or not.
type Rollout struct {
	Pods *podcache.Source
	// Injection, when set, says which admission path injects a SidecarSet.
	Injection func(ss *v1alpha1.SidecarSet) *v1alpha1.RolloutInjection
	// ExcludedNamespaces are the namespaces excluded from injection.
	ExcludedNamespaces []string
	// SidecarSets, when set, looks up the cluster SidecarSets a pod carries (a NamespacedSidecarSet
	// one of them shadows misses the pod for that reason).
	SidecarSets func(name string) *v1alpha1.SidecarSet
	// Resizes, when set, is the controller's: the view plans resizes as rounds do.
	Resizes *resize.Support
	// Clock, when set, is the controller's (the real clock when nil): the view lets namespaces'
	// holds lapse and evictions settle as rounds do, from what the SidecarSet's status records.
	Clock clock.PassiveClock
	// PreDownloads, when set, is the controller's: the view holds the pods its last round held,
	// and shows their pre-download states.
	PreDownloads *pull.PreDownloads
}

// View returns the rollout view of ss.
func (v Rollout) View(_ context.Context, internal *apps.SidecarSet) (*apps.SidecarSetRollout, error) {
	return v.view(internal, rollout.PlanWith)
}

// Preview returns the view of a whole rollout of ss, a SidecarSet with a proposed spec: each pod
// also has the batch that would upgrade it (rollout.Preview).
func (v Rollout) Preview(_ context.Context, internal *apps.SidecarSet) (*apps.SidecarSetRollout, error) {
	return v.view(internal, rollout.PreviewWith)
}

func (v Rollout) view(internal *apps.SidecarSet, planner func(*v1alpha1.SidecarSet, []*rollout.Pod, rollout.Options) *rollout.Result) (*apps.SidecarSetRollout, error) {
	ss := &v1alpha1.SidecarSet{}
	if err := v1alpha1.Convert_apps_SidecarSet_To_v1alpha1_SidecarSet(internal, ss, nil); err != nil {
		return nil, err
	}
	pods, err := v.Pods.Select(ss)
	if err != nil {
		return nil, err
	}
	now := v.now()
	opts := v.Resizes.Options(ss)
	opts.Lapsed = rollout.LapsedHolds(ss.Status.NamespaceHolds, now)
	opts.Deferred, opts.ResizeRefused = rollout.BackoffOptions(rollout.ActiveBackoffs(ss.Status.Backoffs, ss.Status.LatestRevision, now),
		ss.Annotations[rollout.RecreateAnnotation] == "true")
	opts.InFlightEvictions = len(rollout.InFlight(rollout.EvictionsFromStatus(ss.Status.InFlightEvictions), pods, now, rollout.EvictionTTL))
	opts.PreDownloading = v.PreDownloads.Holding(ss)
	plan := planner(ss, pods, opts)
	status := rolloutStatus(ss, plan, rollout.ExplainMissed(ss, plan.NotInjected, v.excluded, v.SidecarSets))
	v.PreDownloads.Annotate(ss, plan, &status)
	if v.Injection != nil {
		status.Injection = v.Injection(ss)
	}
	out := &apps.SidecarSetRollout{ObjectMeta: metav1.ObjectMeta{Name: ss.Name, ResourceVersion: ss.ResourceVersion, Generation: ss.Generation}}
	err = v1alpha1.Convert_v1alpha1_SidecarSetRolloutStatus_To_apps_SidecarSetRolloutStatus(&status, &out.Status, nil)
	return out, err
}

func (v Rollout) now() time.Time {
	if v.Clock == nil {
		return time.Now()
	}
	return v.Clock.Now()
}

func (v Rollout) excluded(namespace string) bool {
	return v.Pods.ExcludedFromInjection(namespace, v.ExcludedNamespaces)
}

// rolloutStatus turns a plan into the rollout view: per pod state and reason, then the pods that
// missed the injection (state NotInjected), per revision pod counts (latest first, then by
// count), the resolved budget and partition.
func rolloutStatus(ss *v1alpha1.SidecarSet, plan *rollout.Result, missed []rollout.Missed) v1alpha1.SidecarSetRolloutStatus {
	st := v1alpha1.SidecarSetRolloutStatus{
		ObservedGeneration: ss.Status.ObservedGeneration,
		LatestRevision:     ss.Status.LatestRevision,
		Paused:             ss.Spec.UpdateStrategy.Paused,
		MaxUnavailable:     plan.MaxUnavailable,
		Partition:          plan.Partition,
		Unavailable:        plan.Unavailable,
	}
	counts := map[string]int32{}
	for i := range plan.Pods {
		pp := &plan.Pods[i]
		counts[pp.Revision]++
		st.Pods = append(st.Pods, v1alpha1.RolloutPod{Namespace: pp.Pod.Namespace, Name: pp.Pod.Name,
			Revision: pp.Revision, State: pp.State, Reason: pp.Reason, Message: pp.Message, Batch: pp.Batch})
	}
	for _, m := range missed {
		st.Pods = append(st.Pods, v1alpha1.RolloutPod{Namespace: m.Pod.Namespace, Name: m.Pod.Name,
			State: v1alpha1.PodRolloutNotInjected, Reason: m.Reason, Message: m.Message})
	}
	p := rollout.Assess(viewItems(st.Pods), st.Paused)
	st.Phase, st.Summary, st.Message = p.Phase(), p.Summary(ss.Name), p.Stalled()
	for name, n := range counts {
		st.Revisions = append(st.Revisions, v1alpha1.RolloutRevision{Name: name, Pods: n})
	}
	sort.Slice(st.Revisions, func(i, j int) bool {
		a, b := st.Revisions[i], st.Revisions[j]
		if (a.Name == st.LatestRevision) != (b.Name == st.LatestRevision) {
			return a.Name == st.LatestRevision
		}
		if a.Pods != b.Pods {
			return a.Pods > b.Pods
		}
		return a.Name < b.Name
	})
	return st
}

// viewItems are the pods of a rollout view as the items rollout.Assess reads, the pods that missed
// the injection included (they are counted in the summary, and hold nothing up).
func viewItems(pods []v1alpha1.RolloutPod) []rollout.Item {
	out := make([]rollout.Item, 0, len(pods))
	for _, p := range pods {
		out = append(out, rollout.Item{Namespace: p.Namespace, Name: p.Name, State: p.State, Reason: p.Reason, Message: p.Message})
	}
	return out
}
