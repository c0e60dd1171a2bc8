package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/condition"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// injectionPoll is how soon a SidecarSet whose injection is not ready yet is looked at again, the
// first time; each further look while it stays so waits twice as long, up to maxInjectionPoll.
// The policy controller tells when injection becomes ready (Resync from its OnChange): this is a
// safety net, for injection that became ready during a round, after its status was decided. At
// a second each, the SidecarSets of a bulk apply waiting for their plan (up to the planner's
// pace, tens of seconds beside 50,000) took a round a second each.
const (
	injectionPoll    = time.Second
	maxInjectionPoll = 8 * time.Second
)

// sync runs a round and looks again soon while the SidecarSet's injection is not ready, or was
// not when the round began: injection may become ready during the round, after its status was
// decided without the generation observed, and no event would bring it back.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	readyBefore := c.ready(name)
	after, err := c.round(ctx, name)
	if err != nil {
		return after, err
	}
	if readyBefore && c.ready(name) {
		c.injectionPolls.Forget(name)
		return after, nil
	}
	if !c.injectionPlanned() { // the term's first plan names it (Resync)
		return after, nil
	}
	if poll := c.injectionPolls.When(name); after == 0 || after > poll {
		after = poll
	}
	return after, nil
}

// ready reports whether the SidecarSet's injection is ready (or it is gone, or nothing gates it).
func (c *Controller) ready(name string) bool {
	if c.injectionReady == nil {
		return true
	}
	cached, err := c.sets.Get(name)
	return err != nil || c.injectionReady(cached)
}

// round gathers the SidecarSet, its revisions and its pods, records its revision, plans the
// rollout (again when a pod the plan would upgrade for free reads ready: readyNow) and applies it
// to the pods, then writes the status once if it changed and, only once it is written, records
// the round's events and metrics. It returns a delay after which to look again, for rollouts
// waiting on the pods' kubelets.
func (c *Controller) round(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.sets.Get(name)
	if apierrors.IsNotFound(err) {
		c.pace.forget(name)
		c.upgrading.forget(name)
		c.backoffs.Forget(name)
		c.preDownloads.Forget(ctx, name)
		c.injectionPolls.Forget(name)
		return 0, c.history.Collect(ctx, name)
	}
	if err != nil {
		return 0, err
	}
	ss := cached.DeepCopy()
	var pods []*rollout.Pod
	if c.pods != nil {
		if pods, err = c.pods.Select(ss); err != nil {
			return 0, err
		}
	}
	recorded, err := c.history.Record(ctx, ss, pods)
	if err != nil {
		return 0, err
	}
	if c.pods == nil {
		return 0, c.writeStatus(ctx, cached, ss, nil)
	}
	c.backoffs.Sync(ss)
	opts := c.resizes.Options(ss)
	opts.Deferred, opts.ResizeRefused = rollout.BackoffOptions(c.backoffs.Active(ss), ss.Annotations[rollout.RecreateAnnotation] == "true")
	opts.Unseen = c.expect.unseen(c.pods, pods) // held back, each alone, until the cache shows our writes
	opts.InFlightEvictions = len(c.evictions.inFlight(ss, seen(pods, opts.Unseen)))
	opts.Lapsed = rollout.LapsedHolds(ss.Status.NamespaceHolds, c.clock.Now())
	plan := rollout.PlanWith(ss, pods, opts)
	pulled, held := c.preDownloads.Round(ctx, ss, plan, &opts) // pulls for plan.Upcoming; opts holds their pods
	if held {
		plan = rollout.PlanWith(ss, pods, opts)
	}
	if ready := c.readyNow(ctx, ss, plan); len(ready) > 0 {
		pods = replace(pods, ready)
		plan = rollout.PlanWith(ss, pods, opts)
	}
	out := c.apply(ctx, ss, plan)
	out.events = append(append(recorded, pulled...), out.events...)
	recreated := c.recreate(ctx, ss, pods, plan)
	out.events = append(out.events, recreated.events...)
	out.failed = append(out.failed, recreated.failed...)
	if len(out.written) > 0 || len(recreated.pods) > 0 {
		opts.InFlightEvictions = len(c.evictions.inFlight(ss, seen(pods, opts.Unseen)))
		plan = rollout.PlanWith(ss, replace(pods, out.written), opts)
	}
	touched := make(map[string]bool, len(out.written)+len(out.failed)+len(opts.Unseen)) // their states wait for a later round
	for key := range opts.Unseen {
		touched[key] = true
	}
	for _, w := range out.written {
		touched[w.Namespace+"/"+w.Name] = true
	}
	for _, f := range out.failed {
		touched[f.pod.Namespace+"/"+f.pod.Name] = true
	}
	for _, p := range out.left {
		touched[p.Namespace+"/"+p.Name] = true
	}
	if len(out.written) > 0 {
		c.upgrading.started(name)
	}
	statesAfter := c.upgrading.delay(name) // while the rollout upgrades pods, verdicts and states wait
	statesLeft := false
	if statesAfter == 0 {
		verdictsLeft := c.syncUpgradable(ctx, ss, plan, touched) // OpenKruise's users read them: first
		statesLeft = c.syncStates(ctx, ss, plan, touched, nil) || verdictsLeft
	} else {
		c.syncStates(ctx, ss, plan, touched, dropsNotReadyBefore) // what the budget reads, at once
	}
	missed := rollout.ExplainMissed(ss, plan.NotInjected, c.isExcluded, c.clusterSidecarSet)
	evicted := c.repair(ctx, ss, pods, plan, missed, opts.Unseen)
	evicted.pods = append(evicted.pods, recreated.pods...)
	out.events = append(out.events, evicted.events...)
	out.failed = append(out.failed, evicted.failed...)
	downloading, downloaded := c.preDownloads.Counts(ss, plan)
	facts := &roundFacts{preDownloading: downloading, preDownloaded: downloaded, counts: plan.Counts, missed: missed, progress: rollout.Assess(rollout.Items(plan), ss.Spec.UpdateStrategy.Paused),
		plan: plan, lapsed: opts.Lapsed, evictions: c.evictions.recorded(name), backoffs: c.backoffs.Active(ss)}
	wasReady := meta.IsStatusConditionTrue(cached.Status.Conditions, condition.Ready)
	if err := c.writeStatus(ctx, cached, ss, facts); err != nil {
		// No event: a round's events follow its status. While the SidecarSet storage is down the
		// rollout goes on (pods live in the main cluster): look again soon, without the growing
		// backoff of a failed round, which could otherwise hold it for minutes once it is back.
		if storageUnavailable(err) {
			klog.V(2).InfoS("status not written, the SidecarSet storage is unavailable", "sidecarset", name, "err", err)
			return c.podsPeriod, nil
		}
		return 0, err
	}
	if was := meta.FindStatusCondition(cached.Status.Conditions, condition.Progressing); was != nil && (was.Reason == condition.ReasonRolloutPaused) != (facts.progressing == condition.ReasonRolloutPaused) {
		reason := "Resumed"
		if facts.progressing == condition.ReasonRolloutPaused {
			reason = "Paused"
		}
		out.events = append(out.events, event.Normal(cached, reason, facts.progress.Summary(cached.Name)))
	}
	for _, ns := range facts.newlyLapsed {
		out.events = append(out.events, event.Warning(cached, ReasonNamespaceHoldLapsed, fmt.Sprintf(
			"the pods of namespace %s held every place of maxUnavailable (%d) for %s while pods of other namespaces waited: they now count against the namespace's share alone, and the other namespaces go on",
			ns, plan.MaxUnavailable, rollout.NamespaceHoldLapse)))
	}
	if facts.ready && !wasReady && plan.Counts.Matched > 0 {
		out.events = append(out.events, event.Normal(cached, condition.ReasonRolloutComplete,
			fmt.Sprintf("every pod the rollout upgrades runs generation %d and is available (%d pods)", cached.Generation, plan.Counts.Matched)))
	}
	event.Record(c.recorder, c.report(ss, plan, missed, out))
	switch {
	case out.more && len(out.failed) == 0:
		return time.Millisecond, nil // the rest of what the plan took, once the queue's others had a turn
	case len(out.failed) > 0:
		return c.podsPeriod * 5, nil // retried soon, without the backoff of a failed round
	case statesAfter > 0:
		return statesAfter, nil // the states the upgrades left to write
	case plan.Unseen > 0:
		return c.podsPeriod, nil // pod events normally requeue sooner, once the cache shows the writes
	case !plan.Done() || len(evicted.pods) > 0 || statesLeft:
		return c.podsPeriod * 5, nil // safety net; pod events normally requeue sooner
	}
	return 0, nil
}

// storageUnavailable tells whether a status write failed because the SidecarSet storage did not
// answer: the server's ServiceUnavailable while its etcd is down, or a timeout.
func storageUnavailable(err error) bool {
	return apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) ||
		errors.Is(err, context.DeadlineExceeded)
}

// report publishes a round's metrics and returns its events: those of applying it, pods that
// missed the injection, pods that cannot be upgraded in place, pods that could not be written.
func (c *Controller) report(ss *v1alpha1.SidecarSet, plan *rollout.Result, missed []rollout.Missed, out applied) []event.Pending {
	c.metrics.Observe(ss.Name, plan)
	events := append(out.events, c.reportNotInjected(ss, missed)...)
	if n := len(plan.NotUpgradable); n > 0 { // none while paused or NotUpdate
		events = append(events, event.Normal(ss, "NotUpgradablePods",
			fmt.Sprintf("SidecarSet in-place update detected %d not upgradable pod(s) in this round, will skip them.", n)))
	}
	return append(events, c.reportFailures(ss, out.failed)...)
}

// reportNotInjected publishes the number of pods that missed the SidecarSet's injection and
// returns an event, the first time, on each that was admitted without it after the SidecarSet
// existed (pods created before it, or in excluded namespaces, are only counted and listed).
func (c *Controller) reportNotInjected(ss *v1alpha1.SidecarSet, missed []rollout.Missed) []event.Pending {
	pods := make([]*rollout.Pod, 0, len(missed))
	admittedWithout := map[*rollout.Pod]bool{}
	for _, m := range missed {
		pods = append(pods, m.Pod)
		admittedWithout[m.Pod] = m.Reason == rollout.ReasonAdmittedWithout
	}
	var events []event.Pending
	for _, p := range c.metrics.NotInjected(ss.Name, pods) {
		if admittedWithout[p] {
			events = append(events, event.Warning(p.Ref(), "NotInjected",
				fmt.Sprintf("SidecarSet %s selects this pod but it was admitted without its sidecars (injection was unavailable or skipped when it was created); recreate the pod to inject them", ss.Name)))
		}
	}
	return events
}

// isExcluded tells whether namespace is excluded from injection (by name, or labelled
// apps.ControlPlaneNamespaceLabel).
func (c *Controller) isExcluded(namespace string) bool {
	return c.pods.ExcludedFromInjection(namespace, c.excluded)
}

// seen returns the pods whose writes the cache shows: an evicted pod the cache still shows counts
// as gone, so that its eviction holds its place until the owner has replaced it.
func seen(pods []*rollout.Pod, unseen map[string]bool) []*rollout.Pod {
	if len(unseen) == 0 {
		return pods
	}
	return slices.DeleteFunc(slices.Clone(pods), func(p *rollout.Pod) bool { return unseen[p.Namespace+"/"+p.Name] })
}

// replace returns pods with the written ones substituted by key.
func replace(pods []*rollout.Pod, written []*corev1.Pod) []*rollout.Pod {
	byKey := make(map[string]*rollout.Pod, len(written))
	for _, p := range written {
		byKey[p.Namespace+"/"+p.Name] = rollout.NewPod(p)
	}
	out := make([]*rollout.Pod, len(pods))
	for i, p := range pods {
		if w, ok := byKey[p.Namespace+"/"+p.Name]; ok {
			p = w
		}
		out[i] = p
	}
	return out
}

// clusterSidecarSet returns the named SidecarSet from the cache, nil when it is not there.
func (c *Controller) clusterSidecarSet(name string) *v1alpha1.SidecarSet {
	ss, err := c.sets.Get(name)
	if err != nil {
		return nil
	}
	return ss
}
