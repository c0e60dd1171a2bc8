package sidecarset

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// This file writes the revision history that revision.go plans.

// revisionsNamed returns the cached revisions labelled with SidecarSet name.
func (c *Controller) revisionsNamed(name string) []*v1alpha1.SidecarSetRevision {
	if c.revisionIndex == nil {
		revs, _ := c.revisions.List(labels.SelectorFromSet(labels.Set{v1alpha1.SidecarSetNameLabel: name}))
		return revs
	}
	return revisionsIndexed(c.revisionIndex, name)
}

// revisionsIndexed returns the revisions of the SidecarSet name from an indexer that has the
// revisionsBySidecarSet index.
func revisionsIndexed(index cache.Indexer, name string) []*v1alpha1.SidecarSetRevision {
	objs, _ := index.ByIndex(revisionsBySidecarSet, name)
	out := make([]*v1alpha1.SidecarSetRevision, 0, len(objs))
	for _, obj := range objs {
		if r, ok := obj.(*v1alpha1.SidecarSetRevision); ok {
			out = append(out, r)
		}
	}
	return out
}

// revisionsBySidecarSet indexes revisions by their SidecarSet's name (the
// v1alpha1.SidecarSetNameLabel label): each round reads its SidecarSet's, and a label selector
// over every revision made a round cost as much as the SidecarSets stored.
const revisionsBySidecarSet = "sidecarset"

func revisionSidecarSet(obj interface{}) ([]string, error) {
	r, ok := obj.(*v1alpha1.SidecarSetRevision)
	if !ok {
		return nil, nil
	}
	if name, ok := r.Labels[v1alpha1.SidecarSetNameLabel]; ok {
		return []string{name}, nil
	}
	return nil, nil
}

// indexRevisions adds the revisionsBySidecarSet index to the revision informer (once: several
// controllers may share the informer) and returns its indexer.
func indexRevisions(inf cache.SharedIndexInformer) (cache.Indexer, error) {
	if _, ok := inf.GetIndexer().GetIndexers()[revisionsBySidecarSet]; !ok {
		if err := inf.AddIndexers(cache.Indexers{revisionsBySidecarSet: revisionSidecarSet}); err != nil {
			return nil, err
		}
	}
	return inf.GetIndexer(), nil
}

// splitOwned separates the revisions ss owns from those an earlier SidecarSet of the same name
// (another UID) left: those are not part of its history.
func splitOwned(revs []*v1alpha1.SidecarSetRevision, ss *v1alpha1.SidecarSet) (owned, stale []*v1alpha1.SidecarSetRevision) {
	for _, r := range revs {
		if owner := metav1.GetControllerOfNoCopy(r); owner == nil || owner.UID == ss.UID {
			owned = append(owned, r)
		} else {
			stale = append(stale, r)
		}
	}
	return owned, stale
}

// deleteRevisions deletes revisions whose SidecarSet is gone: they have no delete verb for users,
// so the controller collects them, as the garbage collector would for its owner.
func (c *Controller) deleteRevisions(ctx context.Context, revs []*v1alpha1.SidecarSetRevision) error {
	for _, r := range revs {
		if metav1.GetControllerOfNoCopy(r) == nil {
			// Imported ahead of its SidecarSet (kubectl sidecarset migrate writes the revisions
			// first), or the SidecarSet is not in the cache yet: it adopts the revision.
			continue
		}
		if err := c.writer.Delete(ctx, r.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting revision %s of a deleted SidecarSet: %w", r.Name, err)
		}
	}
	return nil
}

// recordHistory deletes the revisions an earlier SidecarSet of the same name left, records the
// current spec and sets the status' latest revision and collision count in ss.
func (c *Controller) recordHistory(ctx context.Context, ss *v1alpha1.SidecarSet, pods []*rollout.Pod) ([]event.Pending, error) {
	revs, stale := splitOwned(c.revisionsNamed(ss.Name), ss)
	if err := c.deleteRevisions(ctx, stale); err != nil {
		return nil, err
	}
	written, err := c.applyHistory(ctx, ss, revs, RevisionsInUse(ss, pods))
	if err != nil {
		return nil, err
	}
	ss.Status.LatestRevision, ss.Status.CollisionCount = written.latest, &written.collisions
	return historyEvents(ss, written), nil
}

// historyEvents returns the events of what applyHistory wrote.
func historyEvents(ss *v1alpha1.SidecarSet, written historyWritten) []event.Pending {
	var events []event.Pending
	switch {
	case written.changed == nil:
	case written.created:
		events = append(events, event.Normal(ss, "RevisionCreated",
			fmt.Sprintf("recorded revision %s (number %d) of the new spec", written.changed.Name, written.changed.Revision)))
	default:
		events = append(events, event.Normal(ss, "RolledBack",
			fmt.Sprintf("the spec is that of revision %s again, now number %d", written.changed.Name, written.changed.Revision)))
	}
	if len(written.overCap) > 0 {
		events = append(events, event.Warning(ss, "RevisionCapReached", fmt.Sprintf(
			"deleted revisions %s, pinned or named by pods: at most %d revisions are kept (max(revisionHistoryLimit, %d))",
			strings.Join(written.overCap, ", "), RevisionCap(ss), MinRevisionCap)))
	}
	return events
}

// historyWritten is what applyHistory wrote.
type historyWritten struct {
	// latest is the name of the revision of the current spec.
	latest string
	// collisions is the collision count its name was found with.
	collisions int32
	// changed is the revision created (created) or renumbered, nil when none was written.
	changed *v1alpha1.SidecarSetRevision
	created bool
	// overCap lists the pinned or in-use revisions deleted to keep within RevisionCap.
	overCap []string
}

// applyHistory records the current spec, retrying name collisions with a higher count, and
// prunes old revisions (pinned and in-use ones, inUse, only past RevisionCap).
func (c *Controller) applyHistory(ctx context.Context, ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, inUse sets.Set[string]) (historyWritten, error) {
	collisions := int32(0)
	if ss.Status.CollisionCount != nil {
		collisions = *ss.Status.CollisionCount
	}
	for attempt := 0; attempt < 5; attempt++ {
		plan, err := PlanHistory(ss, revs, collisions, inUse)
		if err != nil {
			return historyWritten{}, err
		}
		written := historyWritten{latest: plan.Latest, collisions: collisions, overCap: plan.OverCap}
		collided, err := c.writeLatest(ctx, plan, &written)
		if err != nil {
			return historyWritten{}, err
		}
		if collided {
			collisions++
			continue
		}
		if err := c.adoptAndPrune(ctx, plan); err != nil {
			return historyWritten{}, err
		}
		return written, nil
	}
	return historyWritten{}, fmt.Errorf("too many revision name collisions for SidecarSet %q", ss.Name)
}

// writeLatest writes the plan's revision of the current spec (created, renumbered or relabelled)
// and notes in written the revision created or renumbered. It reports whether the created
// revision's name collides with another spec's (nothing written then).
func (c *Controller) writeLatest(ctx context.Context, plan HistoryPlan, written *historyWritten) (collided bool, err error) {
	switch {
	case plan.Create != nil:
		err = c.writer.Create(ctx, plan.Create)
		if apierrors.IsAlreadyExists(err) {
			// The revision cache may lag behind a revision this controller just wrote: only a
			// revision with different data under the same name is a collision.
			same, getErr := c.recorded(ctx, plan.Create)
			return getErr == nil && !same, getErr // when same, written by an earlier round
		}
		if err == nil {
			written.changed, written.created = plan.Create, true
		}
		return false, err
	case plan.Renumber != nil:
		written.changed = plan.Renumber
		return false, c.writer.Update(ctx, plan.Renumber)
	case plan.Relabel != nil: // the same revision, now also of the new custom version
		return false, c.writer.Update(ctx, plan.Relabel)
	}
	return false, nil
}

// adoptAndPrune adopts the plan's revisions without a controller and deletes those it prunes.
func (c *Controller) adoptAndPrune(ctx context.Context, plan HistoryPlan) error {
	for _, r := range plan.Adopt {
		if err := c.writer.Update(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("adopting revision %s: %w", r.Name, err)
		}
	}
	for _, old := range plan.Prune {
		if err := c.writer.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// recorded reports whether the stored revision named like want records the same spec.
func (c *Controller) recorded(ctx context.Context, want *v1alpha1.SidecarSetRevision) (bool, error) {
	got, err := c.writer.Get(ctx, want.Name)
	if err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(got.Spec, want.Spec), nil
}
