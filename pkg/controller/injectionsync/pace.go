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
// wait is at most maxPace, the most a new SidecarSet waits for its path during a burst (the
// webhook serves it meanwhile, and the intake webhooks hold its pods until it does). A plan after
// a create beside 10,000 takes about 100 ms (BenchmarkPlanAfterCreate), a wait under a second; a
// full plan of 50,000 about 2.5 s, the bound holding up to plans of 3 s. With 4 and 10 s,
// planning took a fifth of a core through a bulk apply of 50,000, a tenth of the machine's CPU
// that the apply itself was short of.
const (
	dutyFactor = 9
	maxPace    = 30 * time.Second
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

// Policy rewrites: kube-apiserver compiles and cost-checks a policy when it admits it, and again
// when it loads it, for a large group policy a good part of a second of its CPU each time. During
// a bulk apply each reconcile would rewrite the growing group policies, keeping kube-apiserver
// busy compiling them. So after a write of a policy that took d, an update of that policy that
// only adds SidecarSets (plan.Write.Adds) waits until writeFactor times d has passed (at most
// maxWriteWait): about 2d of every (1+writeFactor)d of kube-apiserver's CPU for each policy. The
// webhook injects the SidecarSets it adds meanwhile; creates, deletes and updates that change or
// remove what a policy injects go at once.
const (
	writeFactor  = 8
	maxWriteWait = 10 * time.Second
)

// writeBudget records, by policy name, until when its updates that only add SidecarSets wait.
type writeBudget struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	until map[string]time.Time
}

// wait returns how long such an update of the named policy waits now.
func (b *writeBudget) wait(name string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(0, b.until[name].Sub(b.clock.Now()))
}

// spent records a write of the named policy that ran from start until now (a delete forgets it).
func (b *writeBudget) spent(name string, start time.Time, deleted bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if deleted {
		delete(b.until, name)
		return
	}
	if b.until == nil {
		b.until = map[string]time.Time{}
	}
	end := b.clock.Now()
	b.until[name] = end.Add(min(writeFactor*end.Sub(start), maxWriteWait))
}
