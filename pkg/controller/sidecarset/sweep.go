package sidecarset

import (
	"context"
	"slices"
	"time"

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

// sweepTick is how often sweep looks at the queue's length.
const sweepTick = 5 * time.Millisecond

// sweep adds names to q, twice workers at a time, whenever q holds fewer than workers: the
// workers are never idle while names are left, and an event waits behind a few rounds at most.
func sweep(ctx context.Context, q workqueue.TypedInterface[string], names []string, workers int) {
	tick := time.NewTicker(sweepTick)
	defer tick.Stop()
	for len(names) > 0 {
		if q.ShuttingDown() {
			return
		}
		if q.Len() < workers {
			n := min(2*workers, len(names))
			for _, name := range names[:n] {
				q.Add(name)
			}
			names = names[n:]
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
