package sidecarset

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// repaired is what a round's repair evictions did.
type repaired struct {
	pods   []*rollout.Pod // evicted
	failed []podFailure
	events []event // to record once the status is written
}

// evictionTTL bounds how long an eviction holds a unit of the budget while its owner has not
// replaced the pod.
const evictionTTL = 10 * time.Minute

// evictions are the repair evictions of each SidecarSet whose owners may not have replaced the
// pods yet.
type evictions struct {
	mu    sync.Mutex
	bySet map[string][]rollout.Eviction
	clock clock.Clock
}

// inFlight returns the evictions of a SidecarSet not settled among pods, forgetting the others.
func (e *evictions) inFlight(name string, pods []*rollout.Pod) []rollout.Eviction {
	e.mu.Lock()
	defer e.mu.Unlock()
	left := rollout.InFlight(e.bySet[name], pods, e.clock.Now(), evictionTTL)
	if len(left) == 0 {
		delete(e.bySet, name)
	} else {
		e.bySet[name] = left
	}
	return left
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
// owners recreate them injected.
func (c *Controller) repair(ctx context.Context, ss *v1alpha1.SidecarSet, pods []*rollout.Pod, plan *rollout.Result, missed []rollout.Missed) repaired {
	if c.kube == nil || len(missed) == 0 {
		return repaired{}
	}
	in := rollout.RepairInput{SidecarSet: ss, Plan: plan, Missed: missed, InFlight: c.evictions.inFlight(ss.Name, pods),
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
// (PodDisruptionBudgets apply), guarded by its UID. A pod a budget protects now is left for a
// later round; the next rounds plan only once the cache shows each evicted pod going, and count
// it against maxUnavailable until its owner replaced it.
func (c *Controller) evict(ctx context.Context, ss *v1alpha1.SidecarSet, evict, pods []*rollout.Pod, why evictionWhy) repaired {
	var out repaired
	for _, p := range evict {
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}}
		err := c.kube.PolicyV1().Evictions(p.Namespace).Evict(ctx, eviction)
		switch {
		case err == nil:
			c.expect.maybeWritten(p.Namespace+"/"+p.Name, p.ResourceVersion)
			c.evictions.add(ss.Name, p, pods)
			out.pods = append(out.pods, p)
			out.events = append(out.events, event{p.Ref(), corev1.EventTypeNormal, why.reason,
				fmt.Sprintf("SidecarSet %s evicted this pod, %s, %s", ss.Name, why.what, why.then)})
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err): // gone or replaced meanwhile
		case apierrors.IsTooManyRequests(err): // a PodDisruptionBudget protects it now
			out.events = append(out.events, event{p.Ref(), corev1.EventTypeNormal, "EvictionDeferred",
				fmt.Sprintf("SidecarSet %s will evict this pod, %s, once its PodDisruptionBudget allows: %v", ss.Name, why.what, err)})
		default:
			if ambiguous(err) {
				c.expect.maybeWritten(p.Namespace+"/"+p.Name, p.ResourceVersion)
				c.evictions.add(ss.Name, p, pods)
			}
			out.failed = append(out.failed, podFailure{pod: p, action: actionEvict, err: err})
		}
	}
	return out
}
