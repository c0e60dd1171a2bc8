package sidecarset

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// ReasonNamespaceHoldLapsed is the warning event of a SidecarSet one namespace's pods held every
// place of maxUnavailable for rollout.NamespaceHoldLapse while other namespaces' pods waited.
const ReasonNamespaceHoldLapsed = "NamespaceHoldLapsed"

// NamespaceHolds measures, for each cluster SidecarSet, how long the pods of one namespace have
// held every place of its maxUnavailable while pods of other namespaces waited for one
// (rollout.Result.Holder), and keeps the namespaces whose hold lapsed after
// rollout.NamespaceHoldLapse until their pods hold no place any more (rollout.Options.Lapsed).
// The controller records what its rounds plan; the rollout view reads the same, so that it says
// what the next round does. It is what this process has seen: a new leader measures again from
// its first round (a lapse comes later, never sooner), and a new spec starts over.
type NamespaceHolds struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	bySet map[string]*namespaceHold
}

type namespaceHold struct {
	hash   string // the spec (sidecarset hash) the hold was measured for
	holder string
	since  time.Time
	lapsed map[string]bool
}

// NewNamespaceHolds returns holds measured on clk (the real clock when nil).
func NewNamespaceHolds(clk clock.PassiveClock) *NamespaceHolds {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &NamespaceHolds{clock: clk, bySet: map[string]*namespaceHold{}}
}

// Lapsed returns the namespaces whose hold on ss's maxUnavailable has lapsed: those that lapsed
// before and still hold places, and the current holder once it has held for
// rollout.NamespaceHoldLapse. nil when none (or h is nil).
func (h *NamespaceHolds) Lapsed(ss *v1alpha1.SidecarSet) map[string]bool {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.bySet[ss.Name]
	if e == nil || e.hash != ss.Annotations[v1alpha1.SidecarSetHashAnnotation] {
		return nil
	}
	out := maps.Clone(e.lapsed)
	if e.holder != "" && h.clock.Since(e.since) >= rollout.NamespaceHoldLapse {
		if out == nil {
			out = map[string]bool{}
		}
		out[e.holder] = true
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// observe records the plan of a round of ss made with lapsed (from Lapsed): the namespaces of
// lapsed that still hold places stay lapsed, the others are dropped; the plan's holder is timed
// from the first round that showed it. It returns the namespaces that lapsed with this round.
func (h *NamespaceHolds) observe(ss *v1alpha1.SidecarSet, lapsed map[string]bool, plan *rollout.Result) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	hash := ss.Annotations[v1alpha1.SidecarSetHashAnnotation]
	e := h.bySet[ss.Name]
	if e == nil || e.hash != hash {
		e = &namespaceHold{hash: hash}
	}
	var newly []string
	kept := map[string]bool{}
	for _, ns := range slices.Sorted(maps.Keys(lapsed)) {
		if plan.Holding[ns] == 0 {
			continue
		}
		kept[ns] = true
		if !e.lapsed[ns] {
			newly = append(newly, ns)
		}
	}
	e.lapsed = kept
	switch {
	case plan.Holder == "":
		e.holder = ""
	case plan.Holder != e.holder:
		e.holder, e.since = plan.Holder, h.clock.Now()
	}
	if e.holder == "" && len(e.lapsed) == 0 {
		delete(h.bySet, ss.Name)
	} else {
		h.bySet[ss.Name] = e
	}
	return newly
}

// forget drops a deleted SidecarSet.
func (h *NamespaceHolds) forget(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.bySet, name)
}
