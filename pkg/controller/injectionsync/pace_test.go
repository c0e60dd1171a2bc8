package injectionsync

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPaceDelay(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name       string
		start, end time.Duration // after t0; negative end: none ran
		afterQuiet bool          // the last reconcile followed a quiet spell
		now        time.Duration
		want       time.Duration
	}{
		{"none ran yet", 0, -1, false, 0, 0},
		{"a 100 ms reconcile just ended: 9 times its length", 0, ms(100), false, ms(100), ms(900)},
		{"asked for during the wait", 0, ms(100), false, ms(300), ms(700)},
		{"after the wait: at once", 0, ms(100), false, ms(1100), 0},
		{"a 2 s reconcile (tens of thousands stored): 9 times its length", 0, ms(2000), false, ms(2000), ms(18000)},
		{"a long reconcile waits at most 30 s", 0, ms(5000), false, ms(5000), 30 * time.Second},
		{"the first after a quiet spell: its own length", 0, ms(3000), true, ms(3000), ms(3000)},
		{"the first after a quiet spell, asked for later", 0, ms(3000), true, ms(5000), ms(1000)},
		{"an instant reconcile: at once", ms(50), ms(50), false, ms(50), 0},
		{"a clock that went back", ms(100), ms(50), false, ms(60), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var end time.Time
			if tc.end >= 0 {
				end = t0.Add(tc.end)
			}
			if got := paceDelay(t0.Add(tc.now), t0.Add(tc.start), end, tc.afterQuiet); got != tc.want {
				t.Errorf("paceDelay = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestQuietBefore(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		start, end time.Duration // the last reconcile, after t0; negative end: none ran
		now        time.Duration
		want       bool
	}{
		{"none ran yet: a term's first", 0, -1, 0, true},
		{"started as soon as the burst wait allowed", 0, time.Second, 10 * time.Second, false},
		{"within twice the burst wait", 0, time.Second, 19 * time.Second, false},
		{"past twice the burst wait", 0, time.Second, 20*time.Second + time.Millisecond, true},
		{"after a 5 s plan: the wait is capped at 30 s", 0, 5 * time.Second, 66 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var end time.Time
			if tc.end >= 0 {
				end = t0.Add(tc.end)
			}
			if got := quietBefore(t0.Add(tc.now), t0.Add(tc.start), end); got != tc.want {
				t.Errorf("quietBefore = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPacerBurst: the plans of a burst: the process's first starts at once and so does the
// second; the third waits the second's length (a process's start counts as a quiet spell), the
// others nine times the last one's length; a failed one is retried no sooner; after a quiet
// spell the first starts at once and the next waits its length.
func TestPacerBurst(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	c := &Controller{pace: pacer{clock: clk}}
	plan := func() error { clk.Step(time.Second); return nil }
	if d := c.pace.delay(); d != 0 {
		t.Fatalf("first of a term: waits %v", d)
	}
	_ = c.pace.run(func() error { clk.Step(3 * time.Second); return nil }) // from an empty memo
	if d := c.pace.delay(); d != 0 {
		t.Fatalf("after the process's first: waits %v, want 0", d)
	}
	_ = c.pace.run(func() error { clk.Step(2 * time.Second); return errors.New("conflict") })
	if d := c.retryDelay(5 * time.Millisecond); d != 2*time.Second {
		t.Fatalf("a failed second of 2 s: retried after %v, want 2s", d)
	}
	if d := c.retryDelay(time.Minute); d != time.Minute {
		t.Fatalf("a backoff longer than the pace: retried after %v, want 1m", d)
	}
	clk.Step(2 * time.Second)
	_ = c.pace.run(plan)
	if d := c.pace.delay(); d != 9*time.Second {
		t.Fatalf("third: waits %v, want 9s", d)
	}
	clk.Step(9 * time.Second)
	_ = c.pace.run(plan)
	if d := c.pace.delay(); d != 9*time.Second {
		t.Fatalf("fourth: waits %v, want 9s", d)
	}
	clk.Step(time.Minute)
	_ = c.pace.run(plan)
	if d := c.pace.delay(); d != time.Second {
		t.Fatalf("after a quiet minute: waits %v, want 1s", d)
	}
}

// TestProcessNextKeepsThePace: a reconcile queued sooner than the pace allows (a plan's recheck
// after a second, in a burst of 3 s plans) does not run: it is queued again for when the pace
// allows.
func TestProcessNextKeepsThePace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC))
	c := &Controller{pace: pacer{clock: clk}}
	plan := func() error { clk.Step(3 * time.Second); return nil }
	_ = c.pace.run(plan) // the process's first: the next may start at once
	_ = c.pace.run(plan) // the second: the next waits its length
	clk.Step(3 * time.Second)
	_ = c.pace.run(plan) // in the burst: the next waits 27 s
	last := c.pace.end
	retries := workqueue.DefaultTypedControllerRateLimiter[string]()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(retries, workqueue.TypedRateLimitingQueueConfig[string]{Clock: clk})
	defer q.ShutDown()
	clk.Step(time.Second)
	q.Add(key)
	if !c.processNext(context.Background(), q, retries) {
		t.Fatal("processNext stopped")
	}
	if c.pace.end != last {
		t.Fatal("a reconcile ran 1 s after a 3 s plan of a burst")
	}
	if q.Len() != 0 {
		t.Fatalf("queue holds %d at once, want the reconcile to wait", q.Len())
	}
	clk.Step(26 * time.Second)
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return q.Len() == 1, nil
	}); err != nil {
		t.Fatal("the reconcile was not queued again once the pace allowed it")
	}
}
