package webhook

import (
	"context"
	"strconv"
	"sync"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Watermark is the newest resourceVersion of the SidecarSet events the injection index has taken
// in. A SidecarSet write waits on it before it returns (see Wait), so that a pod created once the
// write has returned finds the injector of this replica knowing what was written, however late
// the informer delivers the event. resourceVersions of one storage grow with every write, so a
// watermark at or past a write's resourceVersion has taken the write in.
type Watermark struct {
	mu      sync.Mutex
	rv      uint64
	changed chan struct{} // closed and replaced whenever rv grows
}

// NewWatermark returns a watermark at zero.
func NewWatermark() *Watermark { return &Watermark{changed: make(chan struct{})} }

// Advance records that the index has taken in an object at resourceVersion rv (ignored when it
// is not a number, as resourceVersions of this server's etcd storage always are).
func (w *Watermark) Advance(rv string) {
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n <= w.rv {
		return
	}
	w.rv = n
	close(w.changed)
	w.changed = make(chan struct{})
}

// Reached reports whether the index has taken in resourceVersion rv.
func (w *Watermark) Reached(rv string) bool {
	reached, _ := w.state(rv)
	return reached
}

// Wait returns once the index has taken in resourceVersion rv, or with ctx's error; at once for
// an rv that is not a number.
func (w *Watermark) Wait(ctx context.Context, rv string) error {
	for {
		reached, changed := w.state(rv)
		if reached {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

func (w *Watermark) state(rv string) (bool, <-chan struct{}) {
	n, err := strconv.ParseUint(rv, 10, 64)
	w.mu.Lock()
	defer w.mu.Unlock()
	return err != nil || n <= w.rv, w.changed
}

// Marks are the watermarks of the two streams the SidecarSet informer merges (package
// allsidecarsets): the SidecarSets, and the NamespacedSidecarSets as the SidecarSets they take
// part as. Each stream delivers its events in resourceVersion order, but the merged one
// interleaves them as they come: a SidecarSet event may be taken in before a NamespacedSidecarSet
// event at an older resourceVersion. One watermark for both would then say a NamespacedSidecarSet
// write was taken in before it was, so each stream has its own.
type Marks struct {
	Cluster, Namespaced *Watermark
}

// NewMarks returns both watermarks at zero.
func NewMarks() *Marks { return &Marks{Cluster: NewWatermark(), Namespaced: NewWatermark()} }

// Lane returns the watermark of the NamespacedSidecarSets when namespaced, else of the
// SidecarSets.
func (m *Marks) Lane(namespaced bool) *Watermark {
	if namespaced {
		return m.Namespaced
	}
	return m.Cluster
}

// Of returns the watermark of the stream ss comes in.
func (m *Marks) Of(ss *v1alpha1.SidecarSet) *Watermark { return m.Lane(v1alpha1.IsNamespaced(ss)) }
