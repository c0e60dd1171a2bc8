package sidecarset

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// This file is the pure revision history logic: which SidecarSetRevision records the current
// spec, under which name, and which old revisions may be pruned.
//
// Names follow OpenKruise's ControllerRevisions: <sidecarset>-<h>, h the safe-encoded decimal
// FNV-32 of the recorded data (spec containers, imagePullSecrets, initContainers, patchPodMetadata,
// volumes as a replace patch, the keys of every object sorted) followed by the collision count. The
// newest revision always equals the live spec; an older identical revision is renumbered instead of
// duplicated. The revision of a spec is found by comparing snapshots, never by name, so a revision
// recorded elsewhere (OpenKruise's, imported by kubectl sidecarset migrate) is reused whatever its
// name; a revision without a controlling SidecarSet is adopted by the SidecarSet it is labelled with.

// maxNamePrefix keeps revision names within the 253 characters of a name.
const maxNamePrefix = 223

// Snapshot returns the part of a SidecarSet a revision records.
func Snapshot(ss *v1alpha1.SidecarSet) v1alpha1.SidecarSetRevisionSpec {
	s := ss.Spec.DeepCopy()
	return v1alpha1.SidecarSetRevisionSpec{
		InitContainers:   s.InitContainers,
		Containers:       s.Containers,
		Volumes:          s.Volumes,
		ImagePullSecrets: s.ImagePullSecrets,
		PatchPodMetadata: s.PatchPodMetadata,
	}
}

// revisionData is the byte form the revision name hashes, identical to the data of OpenKruise's
// ControllerRevision: OpenKruise encodes the SidecarSet, decodes the JSON into generic maps and
// encodes the five fields again, so the keys of every object come out sorted (not in the order
// of the Go fields) and numbers go through float64.
func revisionData(spec v1alpha1.SidecarSetRevisionSpec) ([]byte, error) {
	typed, err := json.Marshal(map[string]interface{}{
		"containers":       spec.Containers,
		"imagePullSecrets": spec.ImagePullSecrets,
		"initContainers":   spec.InitContainers,
		"patchPodMetadata": spec.PatchPodMetadata,
		"volumes":          spec.Volumes,
	})
	if err != nil {
		return nil, err
	}
	var fields map[string]interface{}
	if err := json.Unmarshal(typed, &fields); err != nil {
		return nil, err
	}
	fields["$patch"] = "replace"
	return json.Marshal(map[string]interface{}{"spec": fields})
}

// RevisionName returns the name of the revision recording spec for the SidecarSet.
func RevisionName(sidecarSet string, spec v1alpha1.SidecarSetRevisionSpec, collisionCount int32) (string, error) {
	data, err := revisionData(spec)
	if err != nil {
		return "", err
	}
	h := fnv.New32()
	_, _ = h.Write(data)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	prefix := sidecarSet
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return prefix + "-" + rand.SafeEncodeString(fmt.Sprint(h.Sum32())), nil
}

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
		Spec:           Snapshot(ss),
	}
}

// HistoryPlan says how to make the revision history match a SidecarSet.
type HistoryPlan struct {
	// Create is a new revision to record; nil when an existing one matches the spec.
	Create *v1alpha1.SidecarSetRevision
	// Renumber is an older identical revision to make the newest (roll back); nil otherwise.
	Renumber *v1alpha1.SidecarSetRevision
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
	snapshot := Snapshot(ss)
	var plan HistoryPlan
	var next int64 = 1
	if n := len(revs); n > 0 {
		next = revs[n-1].Revision + 1
	}
	for i, r := range revs {
		if !apiequality.Semantic.DeepEqual(r.Spec, snapshot) {
			continue
		}
		plan.Latest = r.Name
		if i != len(revs)-1 {
			renumbered := r.DeepCopy()
			renumbered.Revision = next
			plan.Renumber = renumbered
		}
	}
	if plan.Latest == "" {
		name, err := RevisionName(ss.Name, snapshot, collisionCount)
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
