package sidecarset

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// podSyncInterval is the least time between two rounds of a SidecarSet that pod events cause.
const podSyncInterval = 100 * time.Millisecond

// pacer spaces out the rounds pod events cause. A pod event for a SidecarSet that has not been
// synced for interval syncs it at once; during a burst of pod events (thousands of pods created or
// turning ready) it is synced every interval instead of once per event, which bounds the planning
// work and the status writes (each one an event every watcher of SidecarSets receives and the
// watch cache keeps). The controller's upgrading pacer records, the same way, when each
// SidecarSet last upgraded pods (see stateQuiet).
type pacer struct {
	mu       sync.Mutex
	interval time.Duration
	clock    clock.PassiveClock
	last     map[string]time.Time
}

func newPacer(interval time.Duration, clk clock.PassiveClock) *pacer {
	return &pacer{interval: interval, clock: clk, last: map[string]time.Time{}}
}

// delay returns how long a pod event for SidecarSet name should wait before its round: 0 when
// the last round began at least interval ago.
func (p *pacer) delay(name string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[name]
	if !ok {
		return 0
	}
	return max(0, p.interval-p.clock.Since(last))
}

// started records that a round of name begins.
func (p *pacer) started(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[name] = p.clock.Now()
}

// forget drops a deleted SidecarSet.
func (p *pacer) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, name)
}
