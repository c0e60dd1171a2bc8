package sidecarset

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/contain"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	informers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// RevisionWriter records and prunes revisions; revisions are read-only to API clients, so the
// controller writes them in process.
type RevisionWriter interface {
	Get(ctx context.Context, name string) (*v1alpha1.SidecarSetRevision, error)
	Create(ctx context.Context, r *v1alpha1.SidecarSetRevision) error
	Update(ctx context.Context, r *v1alpha1.SidecarSetRevision) error
	Delete(ctx context.Context, name string) error
}

// Options are the controller's inputs. Kube and Pods are the main cluster's; without them the
// controller only keeps revisions and status.latestRevision.
type Options struct {
	Client      clientset.Interface
	SidecarSets informers.SidecarSetInformer
	Revisions   informers.SidecarSetRevisionInformer
	Writer      RevisionWriter
	Kube        kubernetes.Interface
	Pods        *PodSource
	Recorder    record.EventRecorder
	Clock       clock.Clock
	// InjectionReady, when set, reports whether pods are injected with the SidecarSet's current
	// generation (its policy and the webhook's match condition are in place). Until then the
	// status does not report the generation as observed: clients that wait for
	// observedGeneration before creating pods get them injected.
	InjectionReady func(*v1alpha1.SidecarSet) bool
	// Candidates, when set, returns the SidecarSets whose selectors may select a pod with these
	// labels in namespace (the injection index): a new pod that misses one of them is reported
	// at once rather than at that SidecarSet's next round.
	Candidates func(namespace string, labels map[string]string) []*v1alpha1.SidecarSet
	// ExcludedNamespaces are never injected (the server's own): their pods are not reported as
	// not injected.
	ExcludedNamespaces []string
	// Injection, when set, says which admission path injects a SidecarSet: the status records it
	// as the InjectedByPolicy condition.
	Injection func(*v1alpha1.SidecarSet) *v1alpha1.RolloutInjection
}

// Controller keeps each SidecarSet's revision history and status, and upgrades the sidecars of the
// pods it injected, in place, at the pace of its update strategy.
type Controller struct {
	client     clientset.Interface
	sets       listers.SidecarSetLister
	revisions  listers.SidecarSetRevisionLister
	writer     RevisionWriter
	pods       *PodSource
	kube       kubernetes.Interface
	recorder   record.EventRecorder
	clock      clock.Clock
	expect     *expectations
	metrics    *progress
	pace       *pacer
	synced     []cache.InformerSynced
	podsPeriod time.Duration

	injectionReady func(*v1alpha1.SidecarSet) bool
	injection      func(*v1alpha1.SidecarSet) *v1alpha1.RolloutInjection
	excluded       map[string]bool
	candidates     func(namespace string, labels map[string]string) []*v1alpha1.SidecarSet

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[string] // of the running term, nil between terms
}

// New returns a controller on the given informers.
func New(o Options) (*Controller, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	c := &Controller{
		client:         o.Client,
		injectionReady: o.InjectionReady,
		injection:      o.Injection,
		excluded:       map[string]bool{},
		candidates:     o.Candidates,
		sets:           o.SidecarSets.Lister(),
		revisions:      o.Revisions.Lister(),
		writer:         o.Writer,
		kube:           o.Kube,
		recorder:       o.Recorder,
		clock:          o.Clock,
		expect:         newExpectations(),
		metrics:        newProgress(o.Clock),
		pace:           newPacer(podSyncInterval, o.Clock),
		synced:         []cache.InformerSynced{o.SidecarSets.Informer().HasSynced, o.Revisions.Informer().HasSynced},
		podsPeriod:     time.Second,
	}
	for _, ns := range o.ExcludedNamespaces {
		c.excluded[ns] = true
	}
	if _, err := o.SidecarSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: func(obj interface{}) {
			c.metrics.forget(objectName(obj))
			c.pace.forget(objectName(obj))
			c.add(objectName(obj), 0) // its round deletes its revisions
		},
	}); err != nil {
		return nil, err
	}
	if o.Pods != nil && o.Kube != nil {
		c.pods = o.Pods
		c.synced = append(c.synced, o.Pods.HasSynced)
		if err := o.Pods.addEventHandler(podHandler(c.enqueueForPod, c.enqueueForNewPod, c.expect)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func objectName(obj interface{}) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
		return ss.Name
	}
	return ""
}

func (c *Controller) enqueue(obj interface{}) {
	if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
		c.add(ss.Name, 0)
	}
}

// enqueueForPod queues a round of SidecarSet name after a pod event, paced (see pacer).
func (c *Controller) enqueueForPod(name string) {
	c.add(name, c.pace.delay(name))
}

// newPodWindow is how recent a pod must be for its creation to be checked for missed injection
// (the informer's first list replays every existing pod as new).
const newPodWindow = time.Minute

// enqueueForNewPod queues a round of each SidecarSet that may select a just created pod and that
// the pod does not carry, so that a missed injection is reported at once.
func (c *Controller) enqueueForNewPod(pod *rollout.Pod) {
	if c.candidates == nil || c.clock.Since(pod.Created) > newPodWindow {
		return
	}
	for _, ss := range c.candidates(pod.Namespace, pod.Labels.Map()) {
		if !sidecar.InjectedListHas(pod.InjectedList(), ss.Name) {
			c.enqueueForPod(ss.Name)
		}
	}
}

// add queues a round of name after delay, unless no term runs (the next term syncs everything).
func (c *Controller) add(name string, delay time.Duration) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	switch {
	case q == nil:
	case delay > 0:
		q.AddAfter(name, delay)
	default:
		q.Add(name)
	}
}

// Run processes SidecarSets until ctx ends: one term, as leader. A term starts with a round of
// every SidecarSet; Run may be called again for a later term.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "sidecarset"})
	c.mu.Lock()
	c.queue = q
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.queue == q {
			c.queue = nil
		}
		c.mu.Unlock()
		q.ShutDown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "listing sidecarsets")
	}
	for _, ss := range sets {
		q.Add(ss.Name)
	}
	// Revisions of SidecarSets deleted while no term ran are deleted by their name's round.
	revs, err := c.revisions.List(labels.Everything())
	if err != nil {
		klog.ErrorS(err, "listing sidecarset revisions")
	}
	for _, r := range revs {
		if _, err := c.sets.Get(r.SidecarSetName); apierrors.IsNotFound(err) {
			q.Add(r.SidecarSetName)
		}
	}
	klog.InfoS("starting sidecarset controller", "workers", workers, "pods", c.pods != nil)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx, q) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	name, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(name)
	c.pace.started(name)
	var after time.Duration
	err := contain.Run("sidecarset-round", func() (err error) {
		after, err = c.sync(ctx, name)
		return err
	})
	switch {
	case err != nil:
		klog.ErrorS(err, "syncing sidecarset", "sidecarset", name)
		q.AddRateLimited(name)
	case after > 0:
		q.Forget(name)
		q.AddAfter(name, after)
	default:
		q.Forget(name)
	}
	return true
}

// injectionPoll is how often a SidecarSet whose injection is not ready yet is looked at again.
const injectionPoll = 100 * time.Millisecond

// sync runs a round and looks again soon while the SidecarSet's injection is not ready.
func (c *Controller) sync(ctx context.Context, name string) (time.Duration, error) {
	after, err := c.round(ctx, name)
	if err == nil && (after == 0 || after > injectionPoll) && c.injectionReady != nil {
		if cached, getErr := c.sets.Get(name); getErr == nil && !c.injectionReady(cached) {
			after = injectionPoll
		}
	}
	return after, err
}

// round gathers the SidecarSet, its revisions and its pods, plans the round, applies it
// (revisions, pod upgrades, pod conditions), then writes the status once if it changed and records
// events. It returns a delay after which to look again, for rollouts waiting on the pods' kubelets.
func (c *Controller) round(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.sets.Get(name)
	if apierrors.IsNotFound(err) {
		c.pace.forget(name)
		return 0, c.deleteRevisions(ctx, c.revisionsNamed(name))
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
	revs, stale := splitOwned(c.revisionsNamed(name), ss)
	if err := c.deleteRevisions(ctx, stale); err != nil {
		return 0, err
	}
	if ss.Status.LatestRevision, ss.Status.CollisionCount, err = c.applyHistory(ctx, ss, revs, RevisionsInUse(ss, pods)); err != nil {
		return 0, err
	}
	if c.pods == nil {
		return 0, c.writeStatus(ctx, cached, ss, nil)
	}
	if !c.expect.satisfied(c.pods, pods) {
		return c.podsPeriod, nil // our last writes are not in the cache yet: plan on them later
	}
	plan := rollout.Plan(ss, pods)
	written, failed := c.apply(ctx, ss, plan)
	if len(written) > 0 {
		plan = rollout.Plan(ss, replace(pods, written))
	}
	if err := c.writeStatus(ctx, cached, ss, &plan.Counts); err != nil {
		return 0, err
	}
	c.metrics.observe(ss.Name, plan)
	c.reportNotInjected(ss, plan.NotInjected)
	if n := len(plan.NotUpgradable); n > 0 && c.recorder != nil { // none while paused or NotUpdate
		c.recorder.Eventf(ss, corev1.EventTypeNormal, "NotUpgradablePods",
			"SidecarSet in-place update detected %d not upgradable pod(s) in this round, will skip them.", n)
	}
	if len(failed) > 0 {
		c.reportFailures(ss, failed)
		return c.podsPeriod * 5, nil // retried soon, without the backoff of a failed round
	}
	if !plan.Done() {
		return c.podsPeriod * 5, nil // safety net; pod events normally requeue sooner
	}
	return 0, nil
}

// reportNotInjected publishes the pods that missed the SidecarSet's injection, outside the
// excluded namespaces, with an event on each the first time.
func (c *Controller) reportNotInjected(ss *v1alpha1.SidecarSet, pods []*rollout.Pod) {
	missed := make([]*rollout.Pod, 0, len(pods))
	for _, p := range pods {
		if !c.excluded[p.Namespace] {
			missed = append(missed, p)
		}
	}
	for _, p := range c.metrics.notInjected(ss.Name, missed) {
		if c.recorder != nil {
			c.recorder.Eventf(p.Ref(), corev1.EventTypeWarning, "NotInjected",
				"SidecarSet %s selects this pod but it was admitted without its sidecars (injection was unavailable or skipped when it was created); recreate the pod to inject them", ss.Name)
		}
	}
}

// revisionsNamed returns the cached revisions labelled with SidecarSet name.
func (c *Controller) revisionsNamed(name string) []*v1alpha1.SidecarSetRevision {
	revs, _ := c.revisions.List(labels.SelectorFromSet(labels.Set{v1alpha1.SidecarSetNameLabel: name}))
	return revs
}

// splitOwned separates the revisions ss owns from those an earlier SidecarSet of the same name
// (another UID) left: those are not part of its history.
func splitOwned(revs []*v1alpha1.SidecarSetRevision, ss *v1alpha1.SidecarSet) (owned, stale []*v1alpha1.SidecarSetRevision) {
	for _, r := range revs {
		if owner := metav1.GetControllerOfNoCopy(r); owner == nil || owner.UID == ss.UID {
			owned = append(owned, r)
		} else {
			stale = append(stale, r)
		}
	}
	return owned, stale
}

// deleteRevisions deletes revisions whose SidecarSet is gone: they have no delete verb for users,
// so the controller collects them, as the garbage collector would for its owner.
func (c *Controller) deleteRevisions(ctx context.Context, revs []*v1alpha1.SidecarSetRevision) error {
	for _, r := range revs {
		if err := c.writer.Delete(ctx, r.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting revision %s of a deleted SidecarSet: %w", r.Name, err)
		}
	}
	return nil
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

// applyHistory records the current spec, retrying name collisions with a higher count, and
// returns the latest revision's name and the collision count; revisions in inUse are kept.
func (c *Controller) applyHistory(ctx context.Context, ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, inUse sets.Set[string]) (string, *int32, error) {
	collisions := int32(0)
	if ss.Status.CollisionCount != nil {
		collisions = *ss.Status.CollisionCount
	}
	for attempt := 0; attempt < 5; attempt++ {
		plan, err := PlanHistory(ss, revs, collisions, inUse)
		if err != nil {
			return "", nil, err
		}
		switch {
		case plan.Create != nil:
			err = c.writer.Create(ctx, plan.Create)
			if apierrors.IsAlreadyExists(err) {
				// The revision cache may lag behind a revision this controller just wrote: only a
				// revision with different data under the same name is a collision.
				same, getErr := c.recorded(ctx, plan.Create)
				if getErr != nil {
					return "", nil, getErr
				}
				if !same {
					collisions++
					continue
				}
				err = nil
			}
		case plan.Renumber != nil:
			err = c.writer.Update(ctx, plan.Renumber)
		}
		if err != nil {
			return "", nil, err
		}
		for _, old := range plan.Prune {
			if err := c.writer.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
				return "", nil, err
			}
		}
		return plan.Latest, &collisions, nil
	}
	return "", nil, fmt.Errorf("too many revision name collisions for SidecarSet %q", ss.Name)
}

// recorded reports whether the stored revision named like want records the same spec.
func (c *Controller) recorded(ctx context.Context, want *v1alpha1.SidecarSetRevision) (bool, error) {
	got, err := c.writer.Get(ctx, want.Name)
	if err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(got.Spec, want.Spec), nil
}

// writeStatus writes the status of ss (latest revision, collisions, counters when known) if it
// differs from the stored one. The cache may lag behind this controller's previous write: on a
// conflict it re-reads the SidecarSet and tries again, unless a newer generation was observed
// meanwhile.
func (c *Controller) writeStatus(ctx context.Context, cached, ss *v1alpha1.SidecarSet, counts *rollout.Counts) error {
	current := cached
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if current.Status.ObservedGeneration > cached.Generation {
			return nil
		}
		st := current.Status.DeepCopy()
		st.LatestRevision = ss.Status.LatestRevision
		st.CollisionCount = ss.Status.CollisionCount
		if c.injectionReady == nil || c.injectionReady(cached) {
			st.ObservedGeneration = cached.Generation
			if c.injection != nil {
				setInjectionCondition(st, c.injection(cached), cached.Generation, metav1.NewTime(c.clock.Now()))
			}
		}
		if counts != nil {
			st.MatchedPods, st.UpdatedPods = counts.Matched, counts.Updated
			st.ReadyPods, st.UpdatedReadyPods = counts.Ready, counts.UpdatedReady
		}
		if apiequality.Semantic.DeepEqual(*st, current.Status) {
			return nil
		}
		updated := current.DeepCopy()
		updated.Status = *st
		_, err := c.client.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, updated, metav1UpdateOptions)
		if apierrors.IsConflict(err) {
			fresh, getErr := c.client.AppsV1alpha1().SidecarSets().Get(ctx, cached.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			current = fresh
		}
		return err
	})
}
