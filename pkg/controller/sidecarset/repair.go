package sidecarset

import (
	"context"
	"fmt"
	"slices"
	"sync"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// repaired is what a round's repair evictions did.
type repaired struct {
	pods   []*rollout.Pod // evicted
	failed []podFailure
	events []event.Pending // to record once the status is written
}

// evictions are the repair evictions of each SidecarSet whose owners may not have replaced the
// pods yet.
type evictions struct {
	mu    sync.Mutex
	bySet map[string][]rollout.Eviction
	clock clock.Clock
}

// inFlight returns the evictions of ss not settled among pods, those its status records
// (written by this term or an earlier one) and those this term made since, and forgets the
// others.
func (e *evictions) inFlight(ss *v1alpha1.SidecarSet, pods []*rollout.Pod) []rollout.Eviction {
	e.mu.Lock()
	defer e.mu.Unlock()
	all := rollout.MergeEvictions(e.bySet[ss.Name], rollout.EvictionsFromStatus(ss.Status.InFlightEvictions))
	left := rollout.InFlight(all, pods, e.clock.Now(), rollout.EvictionTTL)
	if len(left) == 0 {
		delete(e.bySet, ss.Name)
	} else {
		e.bySet[ss.Name] = left
	}
	return left
}

// recorded returns the evictions of the SidecarSet name this term keeps: those in flight when the
// round began (inFlight) and those it made since, for its status.
func (e *evictions) recorded(name string) []rollout.Eviction {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.bySet[name])
}

// add records the eviction of pod, one of pods.
func (e *evictions) add(name string, pod *rollout.Pod, pods []*rollout.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.bySet[name] = append(e.bySet[name], rollout.NewEviction(pod, pods, e.clock.Now()))
}

func (e *evictions) forget(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.bySet, name)
}

// repair evicts the pods rollout.Repairs chooses among pods (the selected ones) so that their
// owners recreate them injected; pods whose last write is not seen yet (unseen) and pods whose
// eviction was refused lately (in backoff) are left out.
func (c *Controller) repair(ctx context.Context, ss *v1alpha1.SidecarSet, pods []*rollout.Pod, plan *rollout.Result, missed []rollout.Missed, unseen map[string]bool) repaired {
	if c.kube == nil || len(missed) == 0 {
		return repaired{}
	}
	missed = slices.DeleteFunc(slices.Clone(missed), func(m rollout.Missed) bool {
		return unseen[m.Pod.Namespace+"/"+m.Pod.Name] || c.backoffs.Deferred(ss, m.Pod.UID, rollout.BackoffEvict)
	})
	in := rollout.RepairInput{SidecarSet: ss, Plan: plan, Missed: missed, InFlight: c.evictions.inFlight(ss, seen(pods, unseen)),
		InjectionReady: c.injectionReady == nil || c.injectionReady(ss)}
	return c.evict(ctx, ss, rollout.Repairs(in), pods, evictionWhy{
		reason: "EvictedNotInjected", what: "which runs without its sidecars",
		then: fmt.Sprintf("so that its owner recreates it injected (%s=true)", rollout.RepairAnnotation)})
}

// recreate evicts the pods the plan recreates (rollout.RecreateAnnotation) so that their owners
// recreate them with the current sidecars.
func (c *Controller) recreate(ctx context.Context, ss *v1alpha1.SidecarSet, pods []*rollout.Pod, plan *rollout.Result) repaired {
	if c.kube == nil || len(plan.Recreate) == 0 || (c.injectionReady != nil && !c.injectionReady(ss)) {
		return repaired{}
	}
	return c.evict(ctx, ss, plan.Recreate, pods, evictionWhy{
		reason: "EvictedNotUpgradable", what: "whose sidecars cannot be upgraded in place",
		then: fmt.Sprintf("so that its owner recreates it with the current sidecars (%s=true)", rollout.RecreateAnnotation)})
}

// evictionWhy says in events why a pod is evicted.
type evictionWhy struct{ reason, what, then string }

// evict evicts each of evict, one of pods (the selected ones), through the Eviction API
// (PodDisruptionBudgets apply), guarded by its UID. An evicted pod counts against maxUnavailable
// until its owner replaced it, and nothing else is planned for it until the cache shows it going.
// A refused eviction (a budget protects the pod now, the pod is under two budgets, a webhook or
// RBAC refuses) is tried again for that pod alone after a backoff, holding no place meanwhile; an
// error that leaves the outcome unknown is settled by reading the pod.
func (c *Controller) evict(ctx context.Context, ss *v1alpha1.SidecarSet, evict, pods []*rollout.Pod, why evictionWhy) repaired {
	var out repaired
	for _, p := range evict {
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
		err := c.kube.PolicyV1().Evictions(p.Namespace).Evict(ctx, eviction)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ambiguous(err) && c.evicted(ctx, p) {
			err = nil // the answer was lost, or the server failed after the eviction
		}
		switch {
		case err == nil:
			c.backoffs.Reset(ss, p.UID, rollout.BackoffEvict)
			c.expect.maybeWritten(p.Namespace+"/"+p.Name, p.ResourceVersion)
			c.evictions.add(ss.Name, p, pods)
			out.pods = append(out.pods, p)
			out.events = append(out.events, event.Normal(p.Ref(), why.reason,
				fmt.Sprintf("SidecarSet %s evicted this pod, %s, %s", ss.Name, why.what, why.then)))
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err): // gone or replaced meanwhile
		case apierrors.IsTooManyRequests(err): // a PodDisruptionBudget protects it now
			after := c.backoffs.Refuse(ss, p, rollout.BackoffEvict, errorMessage(err))
			out.events = append(out.events, event.Normal(p.Ref(), "EvictionDeferred",
				fmt.Sprintf("SidecarSet %s will evict this pod, %s, once its PodDisruptionBudget allows (tried again in %v): %v",
					ss.Name, why.what, after, err)))
		default:
			c.backoffs.Refuse(ss, p, rollout.BackoffEvict, errorMessage(err))
			out.failed = append(out.failed, podFailure{pod: p, action: actionEvict, err: err})
		}
	}
	return out
}

// evicted reads the pod after an eviction whose outcome is unknown: it was evicted when it is
// gone, replaced or being deleted. A pod that cannot be read counts as evicted (the safe side:
// it holds a place until its owner's pods are back).
func (c *Controller) evicted(ctx context.Context, p *rollout.Pod) bool {
	got, err := c.kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		return true
	}
	return got.UID != p.UID || got.DeletionTimestamp != nil
}
