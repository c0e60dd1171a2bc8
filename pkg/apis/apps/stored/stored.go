// Package stored holds what the server stores of a SidecarSet beyond what was written: the
// defaults (applied as the server decodes a request), the status and generation a create resets
// and an update keeps or bumps, and the OpenKruise hash annotations, overwritten on every write
// with the hashes of the spec's wire form so that users cannot pin them.
//
// The registry's strategies call Create and Update; kubectl sidecarset migrate and the offline
// kubectl sidecarset inject call SidecarSet and Revision to predict what the server holds. All of
// them stamp the hashes through one function. Pure: no I/O.
package stored

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Create prepares a new SidecarSet for storage: generation 1, the hashes stamped, and a status
// that only says the controller has not observed it yet (Reconciling True, which kstatus reads
// as in progress; the controller removes it once it has observed a generation). A spec that
// cannot be hashed keeps the annotations it has; validation reports why it is invalid.
func Create(ss *apps.SidecarSet) {
	ss.Status = apps.SidecarSetStatus{Conditions: []metav1.Condition{{
		Type: v1alpha1.SidecarSetReconciling, Status: metav1.ConditionTrue, Reason: "NotObserved",
		Message: "the controller has not observed this SidecarSet yet", LastTransitionTime: ss.CreationTimestamp,
	}}}
	ss.Generation = 1
	_ = stamp(ss)
}

// Update prepares an update for storage: the stored status kept, the generation bumped when the
// spec or the custom version label changes, the hashes restamped.
func Update(ss, old *apps.SidecarSet) {
	ss.Status = old.Status
	if !apiequality.Semantic.DeepEqual(ss.Spec, old.Spec) ||
		ss.Labels[v1alpha1.SidecarSetCustomVersionLabel] != old.Labels[v1alpha1.SidecarSetCustomVersionLabel] {
		ss.Generation = old.Generation + 1
	}
	_ = stamp(ss)
}

// SidecarSet returns a copy of ss as the server holds it once written: defaulted, with its hashes
// stamped. Status and generation are kept as given: they are the server's, and an object read
// back from it (kubectl get -o yaml) carries the ones it set.
func SidecarSet(ss *v1alpha1.SidecarSet) (*v1alpha1.SidecarSet, error) {
	out := ss.DeepCopy()
	v1alpha1.SetObjectDefaults_SidecarSet(out)
	return out, stampWire(out, &out.Spec)
}

// Revision returns a copy of r as the server holds it once written: defaulted.
func Revision(r *v1alpha1.SidecarSetRevision) *v1alpha1.SidecarSetRevision {
	out := r.DeepCopy()
	v1alpha1.SetObjectDefaults_SidecarSetRevision(out)
	return out
}

// Hashes returns the hashes of an internal spec, computed on its wire form.
func Hashes(spec *apps.SidecarSetSpec) (hash.Hashes, error) {
	wire, err := wireSpec(spec)
	if err != nil {
		return hash.Hashes{}, err
	}
	return hash.Of(wire)
}

// stamp overwrites the hash annotations of an internal SidecarSet with the hashes of its spec.
func stamp(ss *apps.SidecarSet) error {
	wire, err := wireSpec(&ss.Spec)
	if err != nil {
		return err
	}
	return stampWire(ss, wire)
}

func wireSpec(spec *apps.SidecarSetSpec) (*v1alpha1.SidecarSetSpec, error) {
	wire := &v1alpha1.SidecarSetSpec{}
	return wire, v1alpha1.Convert_apps_SidecarSetSpec_To_v1alpha1_SidecarSetSpec(spec, wire, nil)
}

// stampWire overwrites the hash annotations of obj with the hashes of its spec's wire form; on
// error obj is left as it is.
func stampWire(obj metav1.Object, spec *v1alpha1.SidecarSetSpec) error {
	h, err := hash.Of(spec)
	if err != nil {
		return err
	}
	h.Stamp(obj)
	return nil
}
