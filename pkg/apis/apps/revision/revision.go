// Package revision holds the pure rules of SidecarSetRevisions that the controller (which records
// them) and kubectl sidecarset migrate (which predicts what the controller does with OpenKruise's)
// share: what a revision records of a SidecarSet (Snapshot), under which name (Name), and which
// stored revision records a given spec (Find).
//
// Names follow OpenKruise's ControllerRevisions: <sidecarset>-<h>, h the safe-encoded decimal
// FNV-32 of the recorded data (spec containers, imagePullSecrets, initContainers, patchPodMetadata,
// volumes as a replace patch, the keys of every object sorted) followed by the collision count. A
// spec's revision is found by comparing snapshots (semantic equality), never by name, so a revision
// recorded elsewhere (OpenKruise's, imported) is found whatever its name. The revision a SidecarSet
// records is New's: the controller writes it, and the per-namespace byte budget measures it before
// it exists. No I/O.
package revision

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// maxNamePrefix keeps revision names within the 253 characters of a name.
const maxNamePrefix = 223

// Snapshot returns the part of a SidecarSet a revision records, deep-copied.
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

// New returns the revision recording the SidecarSet's current spec under name, numbered next:
// labelled with the SidecarSet's name and custom version, annotated with its spec hashes, and
// controlled by it.
func New(ss *v1alpha1.SidecarSet, name string, next int64) *v1alpha1.SidecarSetRevision {
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

// data is the byte form the revision name hashes, identical to the data of OpenKruise's
// ControllerRevision: OpenKruise encodes the SidecarSet, decodes the JSON into generic maps and
// encodes the five fields again, so the keys of every object come out sorted (not in the order
// of the Go fields) and numbers go through float64.
func data(spec v1alpha1.SidecarSetRevisionSpec) ([]byte, error) {
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

// Name returns the name of the revision recording spec for the SidecarSet named sidecarSet.
func Name(sidecarSet string, spec v1alpha1.SidecarSetRevisionSpec, collisionCount int32) (string, error) {
	d, err := data(spec)
	if err != nil {
		return "", err
	}
	h := fnv.New32()
	_, _ = h.Write(d)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(collisionCount), 10)))
	prefix := sidecarSet
	if len(prefix) > maxNamePrefix {
		prefix = prefix[:maxNamePrefix]
	}
	return prefix + "-" + rand.SafeEncodeString(fmt.Sprint(h.Sum32())), nil
}

// Find returns the revision among revs (any order) that records spec, the highest-numbered when
// several do (the later in revs among equal numbers), or nil when none does. Revisions compare
// as stored: pass them defaulted.
func Find(revs []*v1alpha1.SidecarSetRevision, spec v1alpha1.SidecarSetRevisionSpec) *v1alpha1.SidecarSetRevision {
	var found *v1alpha1.SidecarSetRevision
	for _, r := range revs {
		if found != nil && r.Revision < found.Revision {
			continue
		}
		if apiequality.Semantic.DeepEqual(r.Spec, spec) {
			found = r
		}
	}
	return found
}
