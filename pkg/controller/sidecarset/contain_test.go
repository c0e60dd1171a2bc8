package sidecarset

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// TestRoundPanicIsContained: a panic in a SidecarSet's round fails that round (it is retried
// with backoff) instead of the process.
func TestRoundPanicIsContained(t *testing.T) {
	c := &Controller{pace: newPacer(time.Second, clock.RealClock{}), clock: clock.RealClock{}} // no listers: the round panics
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	q.Add("ss")
	if !c.processNext(context.Background(), q) {
		t.Fatal("the worker stopped")
	}
	if n := q.NumRequeues("ss"); n != 1 {
		t.Errorf("the SidecarSet was requeued %d times, want 1 (with backoff)", n)
	}
}
