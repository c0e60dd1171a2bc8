package sidecarset

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// A term starts with a round of every SidecarSet: pods may have come and gone while no term ran,
// and only a round sees it. With tens of thousands stored that sweep takes a minute or more, and
// queued ahead of everything it would hold back what users do meanwhile (a SidecarSet edited
// just after a leader change waited behind the whole sweep). So the SidecarSets whose status
// says work is under way are queued at once, and the others are fed to the queue only while it
// is nearly empty: events (edits, pod changes, new SidecarSets) find at most a few rounds ahead
// of them.

// quietAsRecorded reports whether the status of ss says its last round left nothing under way:
// it saw the current spec, every pod it selects is updated and ready, and it recorded no
// eviction, hold, backoff, pull or missed injection in flight.
func quietAsRecorded(ss *v1alpha1.SidecarSet) bool {
	st := &ss.Status
	return ss.DeletionTimestamp == nil && st.ObservedGeneration == ss.Generation &&
		st.UpdatedPods == st.MatchedPods && st.ReadyPods == st.MatchedPods && st.UpdatedReadyPods == st.MatchedPods &&
		st.NotInjectedPods == 0 && st.PreDownloadingPods == 0 &&
		len(st.InFlightEvictions) == 0 && len(st.NamespaceHolds) == 0 && len(st.Backoffs) == 0
}

// termStart splits the SidecarSets a term starts with into those to round at once and the quiet
// ones, for sweep, each in name order.
func termStart(sets []*v1alpha1.SidecarSet) (now, quiet []string) {
	for _, ss := range sets {
		if quietAsRecorded(ss) {
			quiet = append(quiet, ss.Name)
		} else {
			now = append(now, ss.Name)
		}
	}
	slices.Sort(now)
	slices.Sort(quiet)
	return now, quiet
}

// sweepTick is how often a sweeper looks at the queue's length; maxSweepHold is the longest it
// waits for the term's first injection plan.
const (
	sweepTick    = 5 * time.Millisecond
	maxSweepHold = time.Minute
)

// sweeper is a term's sweep: it adds names to the queue, twice workers at a time, whenever the
// queue holds fewer than workers, so that the workers are never idle while names are left and an
// event waits behind a few rounds at most. Names come from the term's start (the quiet
// SidecarSets) and from Resync (the quiet ones a plan names); a name already waiting is not
// added twice. While hold says so (the term's first injection plan has not come: it names every
// SidecarSet again, rounds before it cannot tell their injection path, and at 50,000 they took
// the CPU that plan needs), names wait.
type sweeper struct {
	mu      sync.Mutex
	names   []string
	waiting sets.Set[string]
	more    chan struct{} // a send (never blocking) says names were added
}

func newSweeper(names []string) *sweeper {
	s := &sweeper{waiting: sets.New[string](), more: make(chan struct{}, 1)}
	s.add(names...)
	return s
}

// add has names swept, those not already waiting, in the order given.
func (s *sweeper) add(names ...string) {
	s.mu.Lock()
	for _, name := range names {
		if !s.waiting.Has(name) {
			s.waiting.Insert(name)
			s.names = append(s.names, name)
		}
	}
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// take removes up to n names from the front.
func (s *sweeper) take(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n = min(n, len(s.names))
	out := slices.Clone(s.names[:n])
	s.names = s.names[n:]
	s.waiting.Delete(out...)
	return out
}

// run feeds q until ctx ends or q shuts down.
func (s *sweeper) run(ctx context.Context, q workqueue.TypedInterface[string], workers int, hold func() bool) {
	tick := time.NewTicker(sweepTick)
	defer tick.Stop()
	for !q.ShuttingDown() {
		if !hold() && q.Len() < workers {
			if names := s.take(2 * workers); len(names) > 0 {
				for _, name := range names {
					q.Add(name)
				}
				continue
			}
			select { // none left: wait for more
			case <-ctx.Done():
				return
			case <-s.more:
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
