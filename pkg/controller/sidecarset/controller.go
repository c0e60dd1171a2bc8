package sidecarset

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	informers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// RevisionWriter records and prunes revisions; revisions are read-only to API clients, so the
// controller writes them in process.
type RevisionWriter interface {
	Get(ctx context.Context, name string) (*v1alpha1.SidecarSetRevision, error)
	Create(ctx context.Context, r *v1alpha1.SidecarSetRevision) error
	Update(ctx context.Context, r *v1alpha1.SidecarSetRevision) error
	Delete(ctx context.Context, name string) error
}

// Controller keeps each SidecarSet's revision history and status.latestRevision,
// status.collisionCount and status.observedGeneration current.
type Controller struct {
	client    clientset.Interface
	sets      listers.SidecarSetLister
	revisions listers.SidecarSetRevisionLister
	writer    RevisionWriter
	synced    []cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New returns a controller on the given informers; client writes SidecarSet status.
func New(client clientset.Interface, sets informers.SidecarSetInformer, revs informers.SidecarSetRevisionInformer, writer RevisionWriter) (*Controller, error) {
	c := &Controller{
		client:    client,
		sets:      sets.Lister(),
		revisions: revs.Lister(),
		writer:    writer,
		synced:    []cache.InformerSynced{sets.Informer().HasSynced, revs.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sidecarset"}),
	}
	_, err := sets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
	})
	return c, err
}

func (c *Controller) enqueue(obj interface{}) {
	if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
		c.queue.Add(ss.Name)
	}
}

// Run processes SidecarSets until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	klog.InfoS("starting sidecarset controller", "workers", workers)
	for i := 0; i < workers; i++ {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		klog.ErrorS(err, "syncing sidecarset", "sidecarset", name)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync gathers the SidecarSet and its revisions, plans the history, applies it, then writes the
// status once if it changed.
func (c *Controller) sync(ctx context.Context, name string) error {
	ss, err := c.sets.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	revs, err := c.revisions.List(labels.SelectorFromSet(labels.Set{v1alpha1.SidecarSetNameLabel: name}))
	if err != nil {
		return err
	}
	collisions := int32(0)
	if ss.Status.CollisionCount != nil {
		collisions = *ss.Status.CollisionCount
	}
	latest, collisions, err := c.applyHistory(ctx, ss, revs, collisions)
	if err != nil {
		return err
	}
	return c.writeStatus(ctx, ss, latest, collisions)
}

// applyHistory records the current spec, retrying name collisions with a higher count.
func (c *Controller) applyHistory(ctx context.Context, ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, collisions int32) (string, int32, error) {
	for attempt := 0; attempt < 5; attempt++ {
		plan, err := PlanHistory(ss, revs, collisions)
		if err != nil {
			return "", collisions, err
		}
		switch {
		case plan.Create != nil:
			err = c.writer.Create(ctx, plan.Create)
			if apierrors.IsAlreadyExists(err) {
				// The revision cache may lag behind a revision this controller just wrote: only a
				// revision with different data under the same name is a collision.
				same, getErr := c.recorded(ctx, plan.Create)
				if getErr != nil {
					return "", collisions, getErr
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
			return "", collisions, err
		}
		for _, old := range plan.Prune {
			if err := c.writer.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
				return "", collisions, err
			}
		}
		return plan.Latest, collisions, nil
	}
	return "", collisions, fmt.Errorf("too many revision name collisions for SidecarSet %q", ss.Name)
}

// recorded reports whether the stored revision named like want records the same spec.
func (c *Controller) recorded(ctx context.Context, want *v1alpha1.SidecarSetRevision) (bool, error) {
	got, err := c.writer.Get(ctx, want.Name)
	if err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(got.Spec, want.Spec), nil
}

func (c *Controller) writeStatus(ctx context.Context, ss *v1alpha1.SidecarSet, latest string, collisions int32) error {
	st := ss.Status
	if st.LatestRevision == latest && st.ObservedGeneration == ss.Generation &&
		st.CollisionCount != nil && *st.CollisionCount == collisions {
		return nil
	}
	updated := ss.DeepCopy()
	updated.Status.LatestRevision = latest
	updated.Status.ObservedGeneration = ss.Generation
	updated.Status.CollisionCount = &collisions
	_, err := c.client.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return err
}
