package sidecarset

import (
	"time"

	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// This file holds what queues a round of a SidecarSet: its own events, and the events of the pods
// that name it in their injected list or that it may select.

func objectName(obj interface{}) string {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
		return ss.Name
	}
	return ""
}

// enqueue queues a round of the SidecarSet of an event. While a term starts (its queue is there,
// its sweep not yet: the informer's first list replays every SidecarSet as added), a quiet one
// is left to the term's start, which lists them all and sweeps the quiet ones: at 50,000 those
// replayed adds put every SidecarSet ahead of an edit made during the restart.
func (c *Controller) enqueue(obj interface{}) {
	ss, ok := obj.(*v1alpha1.SidecarSet)
	if !ok {
		return
	}
	c.mu.Lock()
	starting := c.queue != nil && c.sweep == nil
	c.mu.Unlock()
	if starting && quietAsRecorded(ss) {
		return
	}
	c.add(ss.Name, 0)
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

// Resync has a round of each named SidecarSet (its injection path changed, or it became ready:
// its conditions and observed generation are written again), unless no term runs. Those whose
// status shows work under way (a generation not observed yet above all) are queued at once; the
// quiet ones are swept (sweep.go): a term's first plan names every SidecarSet, and an edit made
// meanwhile would otherwise wait behind them all.
func (c *Controller) Resync(names ...string) {
	now, quiet := underWay(names, c.cached)
	for _, name := range now {
		c.add(name, 0)
	}
	c.mu.Lock()
	sw := c.sweep
	c.mu.Unlock()
	if sw != nil {
		sw.add(quiet...)
		return
	}
	for _, name := range quiet {
		c.add(name, 0)
	}
}

// injectionPlanned reports whether the term's first injection plan has been made (true when no
// plan gates injection).
func (c *Controller) injectionPlanned() bool { return c.planned == nil || c.planned() }

// cached returns the named SidecarSet from the cache, nil when it is not there.
func (c *Controller) cached(name string) *v1alpha1.SidecarSet {
	ss, err := c.sets.Get(name)
	if err != nil {
		return nil
	}
	return ss
}

// underWay splits names into those whose cached SidecarSet (get, nil when not cached) is not
// quiet as recorded, and the quiet ones, each part in the order given.
func underWay(names []string, get func(string) *v1alpha1.SidecarSet) (now, quiet []string) {
	for _, name := range names {
		if ss := get(name); ss != nil && quietAsRecorded(ss) {
			quiet = append(quiet, name)
		} else {
			now = append(now, name)
		}
	}
	return now, quiet
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

// podHandler enqueues the SidecarSets a pod names in its injected-list annotation whenever the
// pod appears, changes or goes away, and hands each pod that appears to added.
func podHandler(enqueue func(string), added func(*rollout.Pod), expect *expectations) cache.ResourceEventHandler {
	notify := func(obj interface{}) {
		pod, ok := obj.(*rollout.Pod)
		if !ok {
			return
		}
		for _, name := range sidecar.ParseInjectedList(pod.InjectedList()) {
			enqueue(name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			notify(obj)
			if pod, ok := obj.(*rollout.Pod); ok {
				added(pod)
			}
		},
		UpdateFunc: func(old, cur interface{}) {
			if old.(*rollout.Pod).ResourceVersion != cur.(*rollout.Pod).ResourceVersion {
				notify(cur)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if pod, ok := obj.(*rollout.Pod); ok {
				expect.forget(pod.Namespace + "/" + pod.Name)
			}
			notify(obj)
		},
	}
}
