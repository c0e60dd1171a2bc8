package history

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/event"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// This file writes the revision history that revision.go plans.

// Store records, renumbers, adopts and prunes revisions; API clients may only read them (and
// create one to import a history), so the controller writes them in process.
type Store interface {
	Get(ctx context.Context, name string) (*v1alpha1.SidecarSetRevision, error)
	Create(ctx context.Context, r *v1alpha1.SidecarSetRevision) error
	Update(ctx context.Context, r *v1alpha1.SidecarSetRevision) error
	Delete(ctx context.Context, name string) error
}

// Writer keeps each SidecarSet's revision history: it reads the revisions from the revision
// informer's index and writes them through a Store.
type Writer struct {
	// index holds the revisions indexed by their SidecarSet (revisionsBySidecarSet).
	index cache.Indexer
	store Store
}

// NewWriter returns the Writer of the revisions the informer caches, written through store. It
// adds the informer's index of revisions by SidecarSet (IndexRevisions).
func NewWriter(revisions cache.SharedIndexInformer, store Store) (*Writer, error) {
	index, err := IndexRevisions(revisions)
	if err != nil {
		return nil, err
	}
	return &Writer{index: index, store: store}, nil
}

// named returns the cached revisions labelled with SidecarSet name.
func (w *Writer) named(name string) []*v1alpha1.SidecarSetRevision {
	return RevisionsOf(w.index, name)
}

// RevisionsOf returns the revisions of the SidecarSet name from an indexer that has the
// index IndexRevisions adds.
func RevisionsOf(index cache.Indexer, name string) []*v1alpha1.SidecarSetRevision {
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

// IndexRevisions adds the revisionsBySidecarSet index to the revision informer (once: several
// controllers may share the informer) and returns its indexer.
func IndexRevisions(inf cache.SharedIndexInformer) (cache.Indexer, error) {
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

// Collect deletes the revisions of the SidecarSet name, which is gone: they have no delete verb
// for users, so the controller collects them, as the garbage collector would for its owner.
func (w *Writer) Collect(ctx context.Context, name string) error {
	return w.delete(ctx, w.named(name))
}

// delete deletes revisions whose SidecarSet is gone.
func (w *Writer) delete(ctx context.Context, revs []*v1alpha1.SidecarSetRevision) error {
	for _, r := range revs {
		if metav1.GetControllerOfNoCopy(r) == nil {
			// Imported ahead of its SidecarSet (kubectl sidecarset migrate writes the revisions
			// first), or the SidecarSet is not in the cache yet: it adopts the revision.
			continue
		}
		if err := w.store.Delete(ctx, r.Name); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting revision %s of a deleted SidecarSet: %w", r.Name, err)
		}
	}
	return nil
}

// Record deletes the revisions an earlier SidecarSet of the same name left, records the current
// spec and sets the status' latest revision and collision count in ss. It returns the events of
// what it wrote, to record once the status is written.
func (w *Writer) Record(ctx context.Context, ss *v1alpha1.SidecarSet, pods []*rollout.Pod) ([]event.Pending, error) {
	revs, stale := splitOwned(w.named(ss.Name), ss)
	if err := w.delete(ctx, stale); err != nil {
		return nil, err
	}
	written, err := w.apply(ctx, ss, revs, RevisionsInUse(ss, pods))
	if err != nil {
		return nil, err
	}
	ss.Status.LatestRevision, ss.Status.CollisionCount = written.latest, &written.collisions
	return historyEvents(ss, written), nil
}

// historyEvents returns the events of what apply wrote.
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

// historyWritten is what apply wrote.
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

// apply records the current spec, retrying name collisions with a higher count, and
// prunes old revisions (pinned and in-use ones, inUse, only past RevisionCap).
func (w *Writer) apply(ctx context.Context, ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, inUse sets.Set[string]) (historyWritten, error) {
	collisions := int32(0)
	if ss.Status.CollisionCount != nil {
		collisions = *ss.Status.CollisionCount
	}
	for attempt := 0; attempt < 5; attempt++ {
		plan, err := Compare(ss, revs, collisions, inUse)
		if err != nil {
			return historyWritten{}, err
		}
		written := historyWritten{latest: plan.Latest, collisions: collisions, overCap: plan.OverCap}
		collided, err := w.writeLatest(ctx, plan, &written)
		if err != nil {
			return historyWritten{}, err
		}
		if collided {
			collisions++
			continue
		}
		if err := w.adoptAndPrune(ctx, plan); err != nil {
			return historyWritten{}, err
		}
		return written, nil
	}
	return historyWritten{}, fmt.Errorf("too many revision name collisions for SidecarSet %q", ss.Name)
}

// writeLatest writes the plan's revision of the current spec (created, renumbered or relabelled)
// and notes in written the revision created or renumbered. It reports whether the created
// revision's name collides with another spec's (nothing written then).
func (w *Writer) writeLatest(ctx context.Context, plan Plan, written *historyWritten) (collided bool, err error) {
	switch {
	case plan.Create != nil:
		err = w.store.Create(ctx, plan.Create)
		if apierrors.IsAlreadyExists(err) {
			// The revision cache may lag behind a revision this controller just wrote: only a
			// revision with different data under the same name is a collision.
			same, getErr := w.recorded(ctx, plan.Create)
			return getErr == nil && !same, getErr // when same, written by an earlier round
		}
		if err == nil {
			written.changed, written.created = plan.Create, true
		}
		return false, err
	case plan.Renumber != nil:
		written.changed = plan.Renumber
		return false, w.store.Update(ctx, plan.Renumber)
	case plan.Relabel != nil: // the same revision, now also of the new custom version
		return false, w.store.Update(ctx, plan.Relabel)
	}
	return false, nil
}

// adoptAndPrune adopts the plan's revisions without a controller and deletes those it prunes.
func (w *Writer) adoptAndPrune(ctx context.Context, plan Plan) error {
	for _, r := range plan.Adopt {
		if err := w.store.Update(ctx, r); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("adopting revision %s: %w", r.Name, err)
		}
	}
	for _, old := range plan.Prune {
		if err := w.store.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// recorded reports whether the stored revision named like want records the same spec.
func (w *Writer) recorded(ctx context.Context, want *v1alpha1.SidecarSetRevision) (bool, error) {
	got, err := w.store.Get(ctx, want.Name)
	if err != nil {
		return false, err
	}
	return apiequality.Semantic.DeepEqual(got.Spec, want.Spec), nil
}
