package history

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// This file is the pure revision history logic (see the package comment); history.go writes
// what it plans.

// NewRevision builds the revision of the SidecarSet's current spec, numbered next (revision.New).
func NewRevision(ss *v1alpha1.SidecarSet, name string, next int64) *v1alpha1.SidecarSetRevision {
	return revision.New(ss, name, next)
}

// Plan says how to make the revision history match a SidecarSet.
type Plan struct {
	// Create is a new revision to record; nil when an existing one matches the spec.
	Create *v1alpha1.SidecarSetRevision
	// Renumber is an older identical revision to make the newest (roll back); nil otherwise.
	Renumber *v1alpha1.SidecarSetRevision
	// Relabel is the revision of the current spec with the SidecarSet's new custom version
	// (label apps.kruise.io/sidecarset-custom-version changed, the spec not), as OpenKruise
	// relabels it; nil otherwise. A revision renumbered is relabelled by Renumber.
	Relabel *v1alpha1.SidecarSetRevision
	// Latest is the name of the revision of the current spec.
	Latest string
	// Prune lists revisions to delete, oldest first.
	Prune []string
	// OverCap lists the revisions of Prune that were pinned or in use: kept beyond
	// revisionHistoryLimit but not past RevisionCap. Oldest first.
	OverCap []string
	// Adopt lists revisions without a controlling SidecarSet (imported), each with the
	// SidecarSet set as its controller, to write; a revision renumbered is adopted by Renumber.
	Adopt []*v1alpha1.SidecarSetRevision
}

// Compare compares the SidecarSet with its existing revisions (any order). Revisions pinned by
// injectionStrategy.revision or named in inUse (those pods run, as their annotations claim) are
// kept beyond revisionHistoryLimit, up to RevisionCap revisions in all.
func Compare(ss *v1alpha1.SidecarSet, existing []*v1alpha1.SidecarSetRevision, collisionCount int32, inUse sets.Set[string]) (Plan, error) {
	revs := append([]*v1alpha1.SidecarSetRevision(nil), existing...)
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	snapshot := revision.Snapshot(ss)
	var plan Plan
	var next int64 = 1
	if n := len(revs); n > 0 {
		next = revs[n-1].Revision + 1
	}
	if r := revision.Find(revs, snapshot); r != nil {
		plan.Latest = r.Name
		if r != revs[len(revs)-1] {
			renumbered := r.DeepCopy()
			renumbered.Revision = next
			plan.Renumber = renumbered
		}
		if v := ss.Labels[v1alpha1.SidecarSetCustomVersionLabel]; v != "" && r.Labels[v1alpha1.SidecarSetCustomVersionLabel] != v {
			relabelled := plan.Renumber
			if relabelled == nil {
				relabelled = r.DeepCopy()
				plan.Relabel = relabelled
			}
			if relabelled.Labels == nil {
				relabelled.Labels = map[string]string{}
			}
			relabelled.Labels[v1alpha1.SidecarSetCustomVersionLabel] = v
		}
	} else {
		name, err := revision.Name(ss.Name, snapshot, collisionCount)
		if err != nil {
			return Plan{}, err
		}
		plan.Create = NewRevision(ss, name, next)
		plan.Latest = name
		revs = append(revs, plan.Create)
	}
	plan.Prune, plan.OverCap = prunable(ss, revs, plan.Latest, inUse)
	pruned := sets.New(plan.Prune...)
	for _, r := range existing {
		if metav1.GetControllerOfNoCopy(r) != nil || pruned.Has(r.Name) {
			continue
		}
		if plan.Renumber != nil && plan.Renumber.Name == r.Name {
			adopt(plan.Renumber, ss)
			continue
		}
		if plan.Relabel != nil && plan.Relabel.Name == r.Name {
			adopt(plan.Relabel, ss)
			continue
		}
		adopted := r.DeepCopy()
		adopt(adopted, ss)
		plan.Adopt = append(plan.Adopt, adopted)
	}
	sort.Slice(plan.Adopt, func(i, j int) bool { return plan.Adopt[i].Revision < plan.Adopt[j].Revision })
	return plan, nil
}

// adopt makes ss the controller of r, as the revisions it records have it, so that r goes with ss.
func adopt(r *v1alpha1.SidecarSetRevision, ss *v1alpha1.SidecarSet) {
	r.OwnerReferences = append(r.OwnerReferences, *metav1.NewControllerRef(ss, v1alpha1.SchemeGroupVersion.WithKind("SidecarSet")))
}

// DefaultRevisionHistoryLimit is the revisionHistoryLimit of a SidecarSet that sets none.
const DefaultRevisionHistoryLimit = 10

// MinRevisionCap is the least hard cap on the revisions stored for one SidecarSet or
// NamespacedSidecarSet: pinned revisions and revisions pods name are kept beyond
// revisionHistoryLimit, but not beyond max(revisionHistoryLimit, MinRevisionCap). Ten is
// Kubernetes' default revisionHistoryLimit (Deployments, StatefulSets, DaemonSets) and this
// server's: with the default history, pinned and in-use revisions take the places of the oldest
// unused ones and no longer add to them; a SidecarSet keeping less history still has room for a
// few pins and pods on older revisions; and a namespace editor cannot grow the revisions of one
// object past ten (or its own revisionHistoryLimit, at most 100) whatever its pods' annotations,
// which it can write, claim.
const MinRevisionCap = 10

// historyLimit is the number of revisions ss keeps when none is pinned or in use (at least 1).
func historyLimit(ss *v1alpha1.SidecarSet) int {
	if l := ss.Spec.RevisionHistoryLimit; l != nil {
		return max(1, int(*l))
	}
	return DefaultRevisionHistoryLimit
}

// RevisionCap returns the most revisions of ss kept, pinned and in-use ones included:
// max(revisionHistoryLimit, MinRevisionCap).
func RevisionCap(ss *v1alpha1.SidecarSet) int {
	return max(historyLimit(ss), MinRevisionCap)
}

// prunable returns the revisions to delete, oldest first, and those of them that were pinned or
// in use; revs is sorted oldest first and includes the latest, which it never returns. The oldest
// revisions go first, in three kinds: those neither pinned nor in use, down to
// revisionHistoryLimit; then, while more than RevisionCap remain, those pods name (in use, as
// their annotations claim, which their owners can write), then those injectionStrategy.revision
// pins (at most two, so only a cap below three reaches them). A name in inUse that is not one of
// revs (a revision of another SidecarSet, or one never recorded) protects nothing.
func prunable(ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, latest string, inUse sets.Set[string]) (prune, overCap []string) {
	pinned := pinnedRevisions(ss, revs)
	pruned := sets.New[string]()
	pruneOldest := func(keep int, mayGo func(name string) bool) {
		n := len(revs) - pruned.Len() - keep
		for _, r := range revs {
			if n <= 0 {
				return
			}
			if r.Name != latest && !pruned.Has(r.Name) && mayGo(r.Name) {
				pruned.Insert(r.Name)
				n--
			}
		}
	}
	pruneOldest(historyLimit(ss), func(name string) bool { return !pinned.Has(name) && !inUse.Has(name) })
	pruneOldest(RevisionCap(ss), func(name string) bool { return !pinned.Has(name) })
	pruneOldest(RevisionCap(ss), func(string) bool { return true })
	for _, r := range revs {
		if !pruned.Has(r.Name) {
			continue
		}
		prune = append(prune, r.Name)
		if pinned.Has(r.Name) || inUse.Has(r.Name) {
			overCap = append(overCap, r.Name)
		}
	}
	return prune, overCap
}

// pinnedRevisions returns the names of the revisions of revs (sorted oldest first) that
// injectionStrategy.revision pins: the one revisionName names and the newest one labelled with
// customVersion (the one injection picks; older ones of the same custom version are not pinned).
func pinnedRevisions(ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision) sets.Set[string] {
	out := sets.New[string]()
	pin := ss.Spec.InjectionStrategy.Revision
	if pin == nil {
		return out
	}
	var newestOfVersion string
	for _, r := range revs {
		if pin.RevisionName != nil && *pin.RevisionName == r.Name {
			out.Insert(r.Name)
		}
		if pin.CustomVersion != nil && r.Labels[v1alpha1.SidecarSetCustomVersionLabel] == *pin.CustomVersion {
			newestOfVersion = r.Name
		}
	}
	if newestOfVersion != "" {
		out.Insert(newestOfVersion)
	}
	return out
}

// RevisionsInUse returns the revisions the SidecarSet's managed pods run, as their hash
// annotation records them.
func RevisionsInUse(ss *v1alpha1.SidecarSet, pods []*rollout.Pod) sets.Set[string] {
	out := sets.New[string]()
	for _, pod := range pods {
		if !rollout.Managed(ss, pod) {
			continue
		}
		if h, ok := pod.Hash(ss.Name); ok && h.Revision() != "" {
			out.Insert(h.Revision())
		}
	}
	return out
}
