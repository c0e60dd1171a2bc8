package sidecarset

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/condition"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// statusTimeout bounds a status write, which hangs while the SidecarSet storage is unreachable
// until the storage says so.
const statusTimeout = 5 * time.Second

// roundFacts is what a round found about the pods, for the status; nil without a pod cache.
type roundFacts struct {
	counts   rollout.Counts
	missed   []rollout.Missed
	progress rollout.Progress
	// ready and progressing are set by desiredStatus: the status written says Ready, and why it
	// is Progressing or not.
	ready       bool
	progressing string
	// plan, lapsed and evictions are what the round planned with and left in flight: the status
	// records the namespaces' holds and the evictions for the next rounds, whoever leads then.
	plan      *rollout.Result
	lapsed    map[string]bool
	evictions []rollout.Eviction
	backoffs  []v1alpha1.PodBackoff
	// preDownloading and preDownloaded count the pods still to upgrade whose pull runs, and those
	// whose node has the new images.
	preDownloading, preDownloaded int32
	// newlyLapsed is set by desiredStatus: the namespaces whose hold lapsed with the status written.
	newlyLapsed []string
}

// writeStatus writes the status of ss (latest revision, collisions, counters when known) if it
// differs from the stored one. The cache may lag behind this controller's previous write: on a
// conflict it re-reads the SidecarSet and tries again, unless a newer generation was observed
// meanwhile. It gives up after statusTimeout (a write hangs while the SidecarSet storage is
// unreachable, until the storage says so).
func (c *Controller) writeStatus(ctx context.Context, cached, ss *v1alpha1.SidecarSet, facts *roundFacts) error {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	current := cached
	return retryOnConflict(retry.DefaultRetry, func() error {
		if current.Status.ObservedGeneration > cached.Generation {
			return nil
		}
		st := c.desiredStatus(current, cached, ss, facts)
		if apiequality.Semantic.DeepEqual(*st, current.Status) {
			return nil
		}
		updated := current.DeepCopy()
		updated.Status = *st
		err := c.updateStatus(ctx, updated)
		if apierrors.IsConflict(err) {
			fresh, getErr := c.get(ctx, cached.Name)
			if getErr != nil {
				return getErr
			}
			current = fresh
		}
		return err
	})
}

// desiredStatus returns current's status with what the round found: the latest revision and
// collisions of ss, the observed generation (once the SidecarSet's injection is ready), and the
// counters and the pods that missed injection when known.
func (c *Controller) desiredStatus(current, cached, ss *v1alpha1.SidecarSet, facts *roundFacts) *v1alpha1.SidecarSetStatus {
	st := current.Status.DeepCopy()
	st.LatestRevision = ss.Status.LatestRevision
	st.CollisionCount = ss.Status.CollisionCount
	observed := c.injectionReady == nil || c.injectionReady(cached)
	if observed {
		st.ObservedGeneration = cached.Generation
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.SidecarSetReconciling) // set by the create
		if c.injection != nil {
			condition.SetInjection(st, c.injection(cached), cached.Generation, metav1.NewTime(c.clock.Now()))
		}
		if c.widened != nil {
			w, widened := c.widened(cached.Name)
			condition.SetWidening(st, w, widened, cached.Generation, metav1.NewTime(c.clock.Now()))
		}
	}
	if facts != nil {
		st.MatchedPods, st.UpdatedPods = facts.counts.Matched, facts.counts.Updated
		st.ReadyPods, st.UpdatedReadyPods = facts.counts.Ready, facts.counts.UpdatedReady
		st.NotInjectedPods = int32(len(facts.missed))
		condition.SetMissed(st, facts.missed, cached.Generation, metav1.NewTime(c.clock.Now()))
		if facts.plan != nil {
			st.NamespaceHolds, facts.newlyLapsed = rollout.NextHolds(current.Status.NamespaceHolds, facts.lapsed, facts.plan, c.clock.Now())
		}
		st.Backoffs = rollout.BackoffsStatus(facts.backoffs)
		st.PreDownloadingPods, st.PreDownloadedPods = facts.preDownloading, facts.preDownloaded
		st.InFlightEvictions = rollout.EvictionsStatus(rollout.MergeEvictions(facts.evictions, recordedSince(cached, current)))
		facts.ready, facts.progressing = condition.SetRollout(st, facts.progress, observed, cached.Name, cached.Generation, metav1.NewTime(c.clock.Now()))
	}
	return st
}

// updateStatus writes the status of ss through its own resource: sidecarsets, or
// namespacedsidecarsets for one that stands for a NamespacedSidecarSet.
func (c *Controller) updateStatus(ctx context.Context, ss *v1alpha1.SidecarSet) error {
	if n := v1alpha1.AsNamespaced(ss); n != nil {
		_, err := c.client.AppsV1alpha1().NamespacedSidecarSets(n.Namespace).UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	}
	_, err := c.client.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, ss, metav1.UpdateOptions{})
	return err
}

// get reads the named SidecarSet, or the NamespacedSidecarSet the name stands for, from storage.
func (c *Controller) get(ctx context.Context, name string) (*v1alpha1.SidecarSet, error) {
	if namespace, local, ok := v1alpha1.SplitNamespacedName(name); ok {
		n, err := c.client.AppsV1alpha1().NamespacedSidecarSets(namespace).Get(ctx, local, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return n.AsSidecarSet(), nil
	}
	return c.client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
}

// recordedSince returns the evictions current's status records and cached's did not: written by
// another term since the round read cached (two leaders briefly both acting), kept so that the
// budget still counts them.
func recordedSince(cached, current *v1alpha1.SidecarSet) []rollout.Eviction {
	if current == cached {
		return nil
	}
	key := func(e v1alpha1.InFlightEviction) string {
		return fmt.Sprintf("%s/%s/%s/%d", e.Namespace, e.Name, e.OwnerUID, e.Time.Unix())
	}
	known := map[string]bool{}
	for _, e := range cached.Status.InFlightEvictions {
		known[key(e)] = true
	}
	var out []rollout.Eviction
	for _, e := range current.Status.InFlightEvictions {
		if !known[key(e)] {
			out = append(out, rollout.EvictionsFromStatus([]v1alpha1.InFlightEviction{e})...)
		}
	}
	return out
}
