package injectionsync

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Pacing: each reconcile plans every stored SidecarSet, so during a burst of events (a kubectl
// apply of a thousand SidecarSets, the policies it writes coming back) reconciling once per event
// would take the server's CPU from the very requests that cause them. A reconcile starts no
// sooner than dutyFactor times the last plan's length after that plan ended, whatever queued it
// (an event, a plan's own recheck, a write's budget, a failed write), so that planning takes at
// most 1/(1+dutyFactor) of a core: through a bulk apply of 50,000, rechecks and retries that came
// at their own times made planning take a core. Only the plan is timed, not the writes that
// follow it: they wait on kube-apiserver (whose CPU the write budget below spares), and a
// reconcile that writes a policy of a few SidecarSets then takes milliseconds of the server's CPU
// but a second of kube-apiserver's, which would delay the webhooks' settled form by seconds
// after every such write. The wait is at most maxPace, the most a new
// SidecarSet waits for its path during a burst (the webhook serves it meanwhile, and the intake
// webhooks hold its pods until it does). After a quiet spell (no reconcile for twice that wait)
// a reconcile starts at once, and the next one waits only the length of the first. The first plan
// of a process starts from an empty memo (at 50,000 stored, 3 times a later plan's length), so
// its length says nothing of the next one's, which may start at once: an edit made while a new
// leader starts is planned right after that first plan. The start of a process counts as a
// quiet spell for the plan after its first: an edit that comes in while that second plan runs
// (a new leader takes writes from when its caches are in, while its first plans run) waits only
// the second's length, not nine times it (27 s at 50,000). A plan after a create
// beside 10,000 takes about 100 ms (BenchmarkPlanAfterCreate); a full plan of 50,000 about 3 s.
const (
	dutyFactor = 9
	maxPace    = 30 * time.Second
)

// paceWait is how long after a reconcile that ran from start to end the next one waits: its
// length times factor, at most maxPace (zero when none ran).
func paceWait(start, end time.Time, factor time.Duration) time.Duration {
	if end.IsZero() || end.Before(start) {
		return 0
	}
	return min(factor*end.Sub(start), maxPace)
}

// paceDelay returns how long a reconcile asked for at now waits, the last one having run from
// start to end (zero times when none has), after a quiet spell or not.
func paceDelay(now, start, end time.Time, afterQuiet bool) time.Duration {
	factor := time.Duration(dutyFactor)
	if afterQuiet {
		factor = 1
	}
	return max(0, end.Add(paceWait(start, end, factor)).Sub(now))
}

// quietBefore reports whether a reconcile starting at now follows a quiet spell: none ran yet, or
// the last one, from start to end, ended more than twice the burst wait ago.
func quietBefore(now, start, end time.Time) bool {
	return end.IsZero() || now.Sub(end) > 2*paceWait(start, end, dutyFactor)
}

// pacer records when the last plan ran, whether it followed a quiet spell, and whether it was
// the pacer's first.
type pacer struct {
	mu         sync.Mutex
	clock      clock.PassiveClock
	start, end time.Time
	afterQuiet bool
	first      bool
}

// delay is paceDelay now; none after the first plan.
func (p *pacer) delay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first {
		return 0
	}
	return paceDelay(p.clock.Now(), p.start, p.end, p.afterQuiet)
}

// run records fn's run as the last plan.
func (p *pacer) run(fn func() error) error {
	start := p.clock.Now()
	p.mu.Lock()
	quiet, first := p.first || quietBefore(start, p.start, p.end), p.end.IsZero()
	p.mu.Unlock()
	err := fn()
	p.mu.Lock()
	p.start, p.end, p.afterQuiet, p.first = start, p.clock.Now(), quiet, first
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
