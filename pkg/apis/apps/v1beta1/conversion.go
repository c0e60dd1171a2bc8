package v1beta1

import (
	"encoding/json"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The shapes of v1beta1 and of the internal (v1alpha1-shaped) SidecarSet differ in two places, as
// in OpenKruise:
//
//   - v1alpha1's spec.namespace is, in v1beta1, a spec.namespaceSelector on the namespace's
//     kubernetes.io/metadata.name label (it replaces a namespaceSelector set beside it);
//   - v1alpha1's apps.kruise.io/sidecarset-custom-version label is, in v1beta1,
//     spec.customVersion, and the label is removed.
//
// The values are OpenKruise's. What one version cannot express is kept in an annotation of the
// other, so that a round trip through either version gives back the object written:
// NamespaceAnnotation on v1beta1 objects, CustomVersionLabelAnnotation on v1alpha1 objects.
const (
	// NamespaceAnnotation, on a v1beta1 SidecarSet, records v1alpha1's spec.namespace and the
	// spec.namespaceSelector it replaced, as JSON {"namespace":..., "namespaceSelector":...}. It is
	// read back, and removed, while spec.namespaceSelector still selects that namespace by name;
	// a SidecarSet whose namespaceSelector was changed in v1beta1 keeps the new selector.
	NamespaceAnnotation = "apps.kruise.io/sidecarset-v1alpha1-namespace"

	// CustomVersionLabelAnnotation, on a v1alpha1 SidecarSet, records the value of an
	// apps.kruise.io/sidecarset-custom-version label written in v1beta1, where the label does not
	// set the custom version (spec.customVersion does); v1alpha1 shows spec.customVersion as that
	// label instead.
	CustomVersionLabelAnnotation = "apps.kruise.io/sidecarset-v1beta1-custom-version-label"
	// EmptyCustomVersionAnnotation, on a v1beta1 SidecarSet, records that the v1alpha1 object has
	// an apps.kruise.io/sidecarset-custom-version label with an empty value, which an empty
	// spec.customVersion cannot tell from no label: a read-modify-write at v1beta1 keeps it.
	EmptyCustomVersionAnnotation = "apps.kruise.io/sidecarset-v1alpha1-empty-custom-version"
)

// namespaceRecord is the value of NamespaceAnnotation.
type namespaceRecord struct {
	Namespace         string                `json:"namespace"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// Convert_apps_SidecarSet_To_v1beta1_SidecarSet converts an internal SidecarSet to v1beta1: the
// custom version label becomes spec.customVersion, spec.namespace becomes a namespace selector.
func Convert_apps_SidecarSet_To_v1beta1_SidecarSet(in *apps.SidecarSet, out *SidecarSet, s conversion.Scope) error {
	if err := autoConvert_apps_SidecarSet_To_v1beta1_SidecarSet(in, out, s); err != nil {
		return err
	}
	labels, annotations := maps.Clone(in.Labels), maps.Clone(in.Annotations)

	out.Spec.CustomVersion = ""
	if v, ok := labels[v1alpha1.SidecarSetCustomVersionLabel]; ok {
		out.Spec.CustomVersion = v
		delete(labels, v1alpha1.SidecarSetCustomVersionLabel)
		if v == "" {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[EmptyCustomVersionAnnotation] = "true"
		}
	}
	if v, ok := annotations[CustomVersionLabelAnnotation]; ok {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.SidecarSetCustomVersionLabel] = v
		delete(annotations, CustomVersionLabelAnnotation)
	}

	if in.Spec.Namespace != "" {
		out.Spec.NamespaceSelector = apps.NamespaceSelector(in.Spec.Namespace, in.Spec.NamespaceSelector)
		record, err := json.Marshal(namespaceRecord{Namespace: in.Spec.Namespace, NamespaceSelector: in.Spec.NamespaceSelector})
		if err != nil {
			return err
		}
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[NamespaceAnnotation] = string(record)
	}
	out.Labels, out.Annotations = nilIfEmpty(labels), nilIfEmpty(annotations)
	return nil
}

// Convert_v1beta1_SidecarSet_To_apps_SidecarSet converts a v1beta1 SidecarSet to the internal
// version: spec.customVersion becomes the custom version label, and a namespace selector that
// NamespaceAnnotation says came from spec.namespace becomes spec.namespace again.
func Convert_v1beta1_SidecarSet_To_apps_SidecarSet(in *SidecarSet, out *apps.SidecarSet, s conversion.Scope) error {
	if err := autoConvert_v1beta1_SidecarSet_To_apps_SidecarSet(in, out, s); err != nil {
		return err
	}
	labels, annotations := maps.Clone(in.Labels), maps.Clone(in.Annotations)

	if raw, ok := annotations[NamespaceAnnotation]; ok {
		var record namespaceRecord
		if json.Unmarshal([]byte(raw), &record) == nil && record.Namespace != "" &&
			apiequality.Semantic.DeepEqual(in.Spec.NamespaceSelector, apps.NamespaceSelector(record.Namespace, nil)) {
			out.Spec.Namespace = record.Namespace
			out.Spec.NamespaceSelector = record.NamespaceSelector
			delete(annotations, NamespaceAnnotation)
		}
	}

	if v, ok := labels[v1alpha1.SidecarSetCustomVersionLabel]; ok {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[CustomVersionLabelAnnotation] = v
		delete(labels, v1alpha1.SidecarSetCustomVersionLabel)
	}
	_, empty := annotations[EmptyCustomVersionAnnotation]
	delete(annotations, EmptyCustomVersionAnnotation)
	if in.Spec.CustomVersion != "" || empty {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.SidecarSetCustomVersionLabel] = in.Spec.CustomVersion
	}
	out.Labels, out.Annotations = nilIfEmpty(labels), nilIfEmpty(annotations)
	return nil
}

// Convert_apps_SidecarSetSpec_To_v1beta1_SidecarSetSpec converts the fields the two specs share.
// spec.namespace needs the object's metadata and is converted by
// Convert_apps_SidecarSet_To_v1beta1_SidecarSet.
func Convert_apps_SidecarSetSpec_To_v1beta1_SidecarSetSpec(in *apps.SidecarSetSpec, out *SidecarSetSpec, s conversion.Scope) error {
	return autoConvert_apps_SidecarSetSpec_To_v1beta1_SidecarSetSpec(in, out, s)
}

// Convert_v1beta1_SidecarSetSpec_To_apps_SidecarSetSpec converts the fields the two specs share.
// spec.customVersion lives in the object's labels internally and is converted by
// Convert_v1beta1_SidecarSet_To_apps_SidecarSet.
func Convert_v1beta1_SidecarSetSpec_To_apps_SidecarSetSpec(in *SidecarSetSpec, out *apps.SidecarSetSpec, s conversion.Scope) error {
	return autoConvert_v1beta1_SidecarSetSpec_To_apps_SidecarSetSpec(in, out, s)
}

// nilIfEmpty returns m, or nil when it is empty (the JSON form of both), so that a conversion
// that adds a key and one that removes it again give back the map they started from.
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
