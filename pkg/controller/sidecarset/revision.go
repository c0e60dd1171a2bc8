package sidecarset

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// This file is the pure revision history logic: which SidecarSetRevision records the current
// spec, under which name, and which old revisions may be pruned.
//
// The snapshot, name and lookup rules are package revision's (shared with kubectl sidecarset
// migrate). The newest revision always equals the live spec; an older identical revision is
// renumbered instead of duplicated. A revision recorded elsewhere (OpenKruise's, imported by
// kubectl sidecarset migrate) is reused whatever its name; a revision without a controlling
// SidecarSet is adopted by the SidecarSet it is labelled with.

// NewRevision builds the revision of the SidecarSet's current spec, numbered next.
func NewRevision(ss *v1alpha1.SidecarSet, name string, next int64) *v1alpha1.SidecarSetRevision {
	labels := map[string]string{v1alpha1.SidecarSetNameLabel: ss.Name}
	if v, ok := ss.Labels[v1alpha1.SidecarSetCustomVersionLabel]; ok {
		labels[v1alpha1.SidecarSetCustomVersionLabel] = v
	}
	annotations := map[string]string{}
	for _, k := range []string{v1alpha1.SidecarSetHashAnnotation, v1alpha1.SidecarSetHashWithoutImageAnnotation} {
		if v, ok := ss.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	return &v1alpha1.SidecarSetRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ss,
				v1alpha1.SchemeGroupVersion.WithKind("SidecarSet"))},
		},
		SidecarSetName: ss.Name,
		Revision:       next,
		Spec:           revision.Snapshot(ss),
	}
}

// HistoryPlan says how to make the revision history match a SidecarSet.
type HistoryPlan struct {
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
	// Adopt lists revisions without a controlling SidecarSet (imported), each with the
	// SidecarSet set as its controller, to write; a revision renumbered is adopted by Renumber.
	Adopt []*v1alpha1.SidecarSetRevision
}

// PlanHistory compares the SidecarSet with its existing revisions (any order). Revisions named in
// inUse (those pods still run) are never pruned.
func PlanHistory(ss *v1alpha1.SidecarSet, existing []*v1alpha1.SidecarSetRevision, collisionCount int32, inUse sets.Set[string]) (HistoryPlan, error) {
	revs := append([]*v1alpha1.SidecarSetRevision(nil), existing...)
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	snapshot := revision.Snapshot(ss)
	var plan HistoryPlan
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
			return HistoryPlan{}, err
		}
		plan.Create = NewRevision(ss, name, next)
		plan.Latest = name
		revs = append(revs, plan.Create)
	}
	plan.Prune = prunable(ss, revs, plan.Latest, inUse)
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

// prunable returns the oldest revisions beyond revisionHistoryLimit (at least 1 kept), never the
// latest, one named by injectionStrategy.revision, nor one pods run.
func prunable(ss *v1alpha1.SidecarSet, revs []*v1alpha1.SidecarSetRevision, latest string, inUse sets.Set[string]) []string {
	limit := 10
	if l := ss.Spec.RevisionHistoryLimit; l != nil {
		limit = max(1, int(*l))
	}
	excess := len(revs) - limit
	var out []string
	for _, r := range revs {
		if excess <= 0 {
			break
		}
		if r.Name == latest || pinned(ss, r) || inUse.Has(r.Name) {
			continue
		}
		out = append(out, r.Name)
		excess--
	}
	return out
}

func pinned(ss *v1alpha1.SidecarSet, r *v1alpha1.SidecarSetRevision) bool {
	pin := ss.Spec.InjectionStrategy.Revision
	if pin == nil {
		return false
	}
	if pin.RevisionName != nil && *pin.RevisionName == r.Name {
		return true
	}
	return pin.CustomVersion != nil && r.Labels[v1alpha1.SidecarSetCustomVersionLabel] == *pin.CustomVersion
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
