package sidecarset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
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
func (c *Controller) recordHistory(ctx context.Context, ss *v1alpha1.SidecarSet, pods []*rollout.Pod) ([]event, error) {
	revs, stale := splitOwned(c.revisionsNamed(ss.Name), ss)
	if err := c.deleteRevisions(ctx, stale); err != nil {
		return nil, err
	}
	var (
		err     error
		changed *v1alpha1.SidecarSetRevision
		created bool
	)
	ss.Status.LatestRevision, ss.Status.CollisionCount, changed, created, err = c.applyHistory(ctx, ss, revs, RevisionsInUse(ss, pods))
	if err != nil || changed == nil {
		return nil, err
	}
	if created {
		return []event{{ss, corev1.EventTypeNormal, "RevisionCreated",
			fmt.Sprintf("recorded revision %s (number %d) of the new spec", changed.Name, changed.Revision)}}, nil
	}
	return []event{{ss, corev1.EventTypeNormal, "RolledBack",
		fmt.Sprintf("the spec is that of revision %s again, now number %d", changed.Name, changed.Revision)}}, nil
}

// applyHistory records the current spec, retrying name collisions with a higher count, and
// returns the latest revision's name and the collision count; revisions in inUse are kept.
// It also returns the revision it created (created) or renumbered, nil when it wrote none.
func (c *Controller) applyHistory(ctx context.Context, ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, inUse sets.Set[string]) (string, *int32, *v1alpha1.SidecarSetRevision, bool, error) {
	collisions := int32(0)
	if ss.Status.CollisionCount != nil {
		collisions = *ss.Status.CollisionCount
	}
	for attempt := 0; attempt < 5; attempt++ {
		plan, err := PlanHistory(ss, revs, collisions, inUse)
		if err != nil {
			return "", nil, nil, false, err
		}
		var changed *v1alpha1.SidecarSetRevision
		created := false
		switch {
		case plan.Create != nil:
			err = c.writer.Create(ctx, plan.Create)
			changed, created = plan.Create, err == nil
			if apierrors.IsAlreadyExists(err) {
				// The revision cache may lag behind a revision this controller just wrote: only a
				// revision with different data under the same name is a collision.
				same, getErr := c.recorded(ctx, plan.Create)
				if getErr != nil {
					return "", nil, nil, false, getErr
				}
				if !same {
					collisions++
					continue
				}
				err, changed = nil, nil // written by an earlier round
			}
		case plan.Renumber != nil:
			err = c.writer.Update(ctx, plan.Renumber)
			changed = plan.Renumber
		case plan.Relabel != nil: // the same revision, now also of the new custom version
			err = c.writer.Update(ctx, plan.Relabel)
		}
		if err != nil {
			return "", nil, nil, false, err
		}
		for _, r := range plan.Adopt {
			if err := c.writer.Update(ctx, r); err != nil && !apierrors.IsNotFound(err) {
				return "", nil, nil, false, fmt.Errorf("adopting revision %s: %w", r.Name, err)
			}
		}
		for _, old := range plan.Prune {
			if err := c.writer.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
				return "", nil, nil, false, err
			}
		}
		return plan.Latest, &collisions, changed, created, nil
	}
	return "", nil, nil, false, fmt.Errorf("too many revision name collisions for SidecarSet %q", ss.Name)
}

// recorded reports whether the stored revision named like want records the same spec.
func (c *Controller) recorded(ctx context.Context, want *v1alpha1.SidecarSetRevision) (bool, error) {
	got, err := c.writer.Get(ctx, want.Name)
	if err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(got.Spec, want.Spec), nil
}
