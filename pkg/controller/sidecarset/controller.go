package sidecarset

import (
	"context"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/contain"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/backoff"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/history"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/metric"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/podcache"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/pull"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/resize"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	informers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// Options are the controller's inputs. Kube and Pods are the main cluster's; without them the
// controller only keeps revisions and status.latestRevision.
type Options struct {
	Client      clientset.Interface
	SidecarSets informers.SidecarSetInformer
	Revisions   informers.SidecarSetRevisionInformer
	Writer      history.Store
	Kube        kubernetes.Interface
	Pods        *podcache.Source
	Recorder    record.EventRecorder
	Clock       clock.Clock
	// InjectionReady, when set, reports whether pods are injected with the SidecarSet's current
	// generation (its policy and the webhook's match condition are in place). Until then the
	// status does not report the generation as observed: clients that wait for
	// observedGeneration before creating pods get them injected.
	InjectionReady func(*v1alpha1.SidecarSet) bool
	// InjectionPlanned, when set, reports whether the term's first injection plan has been made:
	// it names every SidecarSet (Resync), so until then the quiet ones are not swept and no round
	// looks again for an injection not ready.
	InjectionPlanned func() bool
	// Candidates, when set, returns the SidecarSets whose selectors may select a pod with these
	// labels in namespace (the injection index): a new pod that misses one of them is reported
	// at once rather than at that SidecarSet's next round.
	Candidates func(namespace string, labels map[string]string) []*v1alpha1.SidecarSet
	// ExcludedNamespaces are never injected (the server's own): their pods are not reported as
	// not injected.
	ExcludedNamespaces []string
	// Injection, when set, says which admission path injects a SidecarSet: the status records it
	// as the Injected condition.
	Injection func(*v1alpha1.SidecarSet) *v1alpha1.RolloutInjection
	// Widened, when set, says whether the named SidecarSet leaves the injection webhooks without a
	// label selector, and why: the status records it as the WebhookReceivesEveryPod condition.
	Widened func(name string) (apps.Widening, bool)
	// Resizes, when set, lets rollouts resize sidecars in place (see resize.Support); without it a
	// change of resources waits for the pods to be recreated.
	Resizes *resize.Support
	// PreDownloads, when set, pulls new sidecar images ahead of the upgrades of the SidecarSets
	// that ask for it (predownload.ParallelismAnnotation).
	PreDownloads *pull.PreDownloads
}

// Controller keeps each SidecarSet's revision history and status, and upgrades the sidecars of the
// pods it injected, in place, at the pace of its update strategy.
type Controller struct {
	client    clientset.Interface
	sets      listers.SidecarSetLister
	revisions listers.SidecarSetRevisionLister
	history   *history.Writer
	pods      *podcache.Source
	kube      kubernetes.Interface
	recorder  record.EventRecorder
	clock     clock.Clock
	expect    *expectations
	metrics   *metric.Progress
	pace      *pacer
	evictions *evictions
	// backoffs delay the next upgrade, resize or eviction of a pod kube-apiserver refused it.
	backoffs   *backoff.Pods
	synced     []cache.InformerSynced
	podsPeriod time.Duration

	injectionReady func(*v1alpha1.SidecarSet) bool
	planned        func() bool
	injection      func(*v1alpha1.SidecarSet) *v1alpha1.RolloutInjection
	widened        func(string) (apps.Widening, bool)
	excluded       []string
	candidates     func(namespace string, labels map[string]string) []*v1alpha1.SidecarSet
	resizes        *resize.Support
	preDownloads   *pull.PreDownloads
	stateWrites    flowcontrol.RateLimiter // of upgrade states alone (syncStates)
	verdictWrites  flowcontrol.RateLimiter // of the first SidecarSetUpgradable verdicts (syncUpgradable)
	upgrading      *pacer                  // when each SidecarSet last upgraded pods (see stateQuiet)
	// injectionPolls spaces the looks at a SidecarSet whose injection is not ready (see sync).
	injectionPolls workqueue.TypedRateLimiter[string]

	mu    sync.Mutex
	queue workqueue.TypedRateLimitingInterface[string] // of the running term, nil between terms
	sweep *sweeper                                     // of the running term, nil between terms
}

// New returns a controller on the given informers.
func New(o Options) (*Controller, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	c := &Controller{
		client:         o.Client,
		injectionReady: o.InjectionReady,
		planned:        o.InjectionPlanned,
		injection:      o.Injection,
		widened:        o.Widened,
		candidates:     o.Candidates,
		resizes:        o.Resizes,
		stateWrites:    flowcontrol.NewTokenBucketRateLimiterWithClock(stateWritesPerSecond, stateWritesBurst, o.Clock),
		verdictWrites:  flowcontrol.NewTokenBucketRateLimiterWithClock(verdictWritesPerSecond, verdictWritesBurst, o.Clock),
		sets:           o.SidecarSets.Lister(),
		revisions:      o.Revisions.Lister(),
		kube:           o.Kube,
		recorder:       o.Recorder,
		clock:          o.Clock,
		expect:         newExpectations(o.Clock),
		metrics:        metric.New(o.Clock),
		pace:           newPacer(podSyncInterval, o.Clock),
		upgrading:      newPacer(stateQuiet, o.Clock),
		injectionPolls: workqueue.NewTypedItemExponentialFailureRateLimiter[string](injectionPoll, maxInjectionPoll),
		evictions:      &evictions{bySet: map[string][]rollout.Eviction{}, clock: o.Clock},
		synced:         []cache.InformerSynced{o.SidecarSets.Informer().HasSynced, o.Revisions.Informer().HasSynced},
		podsPeriod:     time.Second,
	}
	c.backoffs = backoff.New(o.Clock)
	c.excluded = slices.Clone(o.ExcludedNamespaces)
	var err error
	if c.history, err = history.NewWriter(o.Revisions.Informer(), o.Writer); err != nil {
		return nil, err
	}
	if _, err := o.SidecarSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: func(obj interface{}) {
			c.metrics.Forget(objectName(obj))
			c.pace.forget(objectName(obj))
			c.evictions.forget(objectName(obj))
			c.backoffs.Forget(objectName(obj))
			c.add(objectName(obj), 0) // its round deletes its revisions
		},
	}); err != nil {
		return nil, err
	}
	if o.PreDownloads != nil && o.Pods != nil && o.Kube != nil {
		c.preDownloads = o.PreDownloads
		c.synced = append(c.synced, o.PreDownloads.HasSynced)
		o.PreDownloads.WatchPulls(func(name string) { c.add(name, 0) })
	}
	if o.Pods != nil && o.Kube != nil {
		c.pods = o.Pods
		c.synced = append(c.synced, o.Pods.HasSynced)
		if err := o.Pods.AddEventHandler(podHandler(c.enqueueForPod, c.enqueueForNewPod, c.expect)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Run processes SidecarSets until ctx ends: one term, as leader. A term starts with a round of
// every SidecarSet, those with work under way first and the quiet ones as the queue empties
// (sweep.go); Run may be called again for a later term.
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
			c.queue, c.sweep = nil, nil
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
	now, quiet := termStart(sets)
	sw := newSweeper(quiet)
	c.mu.Lock()
	if c.queue == q {
		c.sweep = sw
	}
	c.mu.Unlock()
	for _, name := range now {
		q.Add(name)
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
	klog.InfoS("starting sidecarset controller", "workers", workers, "pods", c.pods != nil, "underWay", len(now), "quiet", len(quiet))
	var running sync.WaitGroup
	started := c.clock.Now()
	running.Go(func() {
		sw.run(ctx, q, workers, func() bool { return !c.injectionPlanned() && c.clock.Since(started) < maxSweepHold })
	})
	for i := 0; i < workers; i++ {
		running.Add(1)
		go func() {
			defer running.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for c.processNext(ctx, q) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	q.ShutDown()
	running.Wait()    // the term's rounds are over before Run returns (the next term may start then)
	c.metrics.Reset() // the term ended: the next leader reports the gauges
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
