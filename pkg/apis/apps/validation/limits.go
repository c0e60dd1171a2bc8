package validation

import (
	"encoding/json"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Limits on what one SidecarSet or NamespacedSidecarSet may hold. Each bounds what one object,
// written by anyone who may write the kind (namespace editors for NamespacedSidecarSets), costs
// everyone else: the server's etcd, the revisions it keeps, and the shared injection objects
// (webhook selectors, group policies) its selector and containers are copied into.
const (
	// MaxRevisionHistoryLimit bounds spec.revisionHistoryLimit. Kubernetes (Deployments,
	// StatefulSets, DaemonSets) and OpenKruise bound it below only; here every kept revision is a
	// SidecarSetRevision in the server's etcd holding the injected part of the spec, so an
	// unbounded limit lets one object, edited in a loop, fill etcd. 100 is ten times the default
	// (10) and, with MaxSpecBytes, keeps one object's history under about 13 MiB.
	MaxRevisionHistoryLimit = 100
	// MaxSelectorValues bounds the label values of spec.selector and of spec.namespaceSelector
	// (each matchLabels entry counts one, each matchExpressions requirement its values, at least
	// one): the server copies them into its injection webhooks' objectSelectors and policies.
	MaxSelectorValues = 64
	// MaxContainers bounds spec.containers and, separately, spec.initContainers.
	MaxContainers = 16
	// MaxSpecBytes bounds the spec's size as stored (v1alpha1 JSON): 128 KiB, far above any
	// realistic sidecar spec, and well within etcd's object limit for the object and its revisions.
	MaxSpecBytes = 128 << 10
)

// validateLimits checks the limits above. On an update (old not nil) a field already beyond its
// limit that the update leaves unchanged is not an error: objects stored before a limit existed
// stay writable, they only cannot grow.
func validateLimits(spec, old *apps.SidecarSetSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if l := spec.RevisionHistoryLimit; l != nil && *l > MaxRevisionHistoryLimit &&
		(old == nil || old.RevisionHistoryLimit == nil || *old.RevisionHistoryLimit != *l) {
		allErrs = append(allErrs, field.Invalid(path.Child("revisionHistoryLimit"), *l, fmt.Sprintf(
			"must be less than or equal to %d: every kept revision is stored by the server", MaxRevisionHistoryLimit)))
	}
	for _, s := range []struct {
		name     string
		sel, was *metav1.LabelSelector
	}{
		{"selector", spec.Selector, oldField(old, func(o *apps.SidecarSetSpec) *metav1.LabelSelector { return o.Selector })},
		{"namespaceSelector", spec.NamespaceSelector, oldField(old, func(o *apps.SidecarSetSpec) *metav1.LabelSelector { return o.NamespaceSelector })},
	} {
		if n := selectorValues(s.sel); n > MaxSelectorValues && (old == nil || !apiequality.Semantic.DeepEqual(s.sel, s.was)) {
			allErrs = append(allErrs, withDetail(field.TooMany(path.Child(s.name), n, MaxSelectorValues),
				"must have at most %d label values (matchLabels entries and matchExpressions values together), has %d", MaxSelectorValues, n))
		}
	}
	if n := len(spec.Containers); n > MaxContainers && (old == nil || n > len(old.Containers)) {
		allErrs = append(allErrs, field.TooMany(path.Child("containers"), n, MaxContainers))
	}
	if n := len(spec.InitContainers); n > MaxContainers && (old == nil || n > len(old.InitContainers)) {
		allErrs = append(allErrs, field.TooMany(path.Child("initContainers"), n, MaxContainers))
	}
	if n := specBytes(spec); n > MaxSpecBytes && (old == nil || n > specBytes(old)) {
		allErrs = append(allErrs, withDetail(field.TooLong(path, "", MaxSpecBytes),
			"may not be more than %d bytes as stored (JSON), is %d", MaxSpecBytes, n))
	}
	return allErrs
}

// oldField returns get(old), nil when there is no old spec.
func oldField(old *apps.SidecarSetSpec, get func(*apps.SidecarSetSpec) *metav1.LabelSelector) *metav1.LabelSelector {
	if old == nil {
		return nil
	}
	return get(old)
}

// selectorValues counts the label values of sel: one per matchLabels entry, and the values of
// each matchExpressions requirement (one for Exists and DoesNotExist, which list none).
func selectorValues(sel *metav1.LabelSelector) int {
	if sel == nil {
		return 0
	}
	n := len(sel.MatchLabels)
	for _, r := range sel.MatchExpressions {
		n += max(len(r.Values), 1)
	}
	return n
}

// specBytes is the size of spec as stored: its v1alpha1 JSON. A spec that cannot be converted or
// encoded counts as empty; the other rules report why it is invalid.
func specBytes(spec *apps.SidecarSetSpec) int {
	wire := &v1alpha1.SidecarSetSpec{}
	if err := v1alpha1.Convert_apps_SidecarSetSpec_To_v1alpha1_SidecarSetSpec(spec, wire, nil); err != nil {
		return 0
	}
	b, err := json.Marshal(wire)
	if err != nil {
		return 0
	}
	return len(b)
}
