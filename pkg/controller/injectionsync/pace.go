package injectionsync

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Pacing: each reconcile plans every stored SidecarSet, so during a burst of events (a kubectl
// apply of a thousand SidecarSets, the policies it writes coming back) reconciling once per event
// would take the server's CPU from the very requests that cause them. A reconcile an event asks
// for starts no sooner than dutyFactor times the last one's length after that one ended, so that
// planning takes at most 1/(1+dutyFactor) of a core; after a quiet spell it starts at once. The
// wait is at most maxPace, the most a new SidecarSet waits for its path during a burst.
const (
	dutyFactor = 4
	maxPace    = time.Second
)

// paceDelay returns how long a reconcile asked for at now waits, the last one having run from
// start to end (zero times when none has).
func paceDelay(now, start, end time.Time) time.Duration {
	if end.IsZero() || end.Before(start) {
		return 0
	}
	next := end.Add(min(dutyFactor*end.Sub(start), maxPace))
	return max(0, next.Sub(now))
}

// pacer records when the last reconcile ran.
type pacer struct {
	mu         sync.Mutex
	clock      clock.PassiveClock
	start, end time.Time
}

// delay is paceDelay now.
func (p *pacer) delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return paceDelay(p.clock.Now(), p.start, p.end)
}

// run records fn's run as the last reconcile.
func (p *pacer) run(fn func() error) error {
	start := p.clock.Now()
	err := fn()
	p.mu.Lock()
	p.start, p.end = start, p.clock.Now()
	p.mu.Unlock()
	return err
}
