package validation

import (
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// ValidateNamespacedSidecarSet validates a new, defaulted NamespacedSidecarSet: a SidecarSet's
// rules, a namespace, no spec.namespace or spec.namespaceSelector (it selects pods of its own
// namespace only), and a namespace and name that fit together in the label value that names the
// SidecarSet it takes part as (apps.NamespacedName).
func ValidateNamespacedSidecarSet(n *apps.NamespacedSidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&n.ObjectMeta, true, validateName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateNamespacedName(n.Namespace, n.Name)...)
	allErrs = append(allErrs, forbidPreDownload(n.Annotations)...)
	allErrs = append(allErrs, forbidInjectionPath(n.Annotations)...)
	allErrs = append(allErrs, validateNamespacedScope(&n.Spec)...)
	allErrs = append(allErrs, validateSpec(&n.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateLimits(&n.Spec, nil, field.NewPath("spec"))...)
}

// ValidateNamespacedSidecarSetUpdate validates an update as ValidateSidecarSetUpdate does.
func ValidateNamespacedSidecarSetUpdate(newN, oldN *apps.NamespacedSidecarSet) field.ErrorList {
	if errs := append(forbidPreDownload(newN.Annotations), forbidInjectionPath(newN.Annotations)...); len(errs) > 0 {
		return append(errs, validateNamespacedScope(&newN.Spec)...)
	}
	allErrs := validateNamespacedScope(&newN.Spec)
	return append(allErrs, ValidateSidecarSetUpdate(newN.View(), oldN.View())...)
}

// ValidateNamespacedSidecarSetStatusUpdate validates a status update as for a SidecarSet.
func ValidateNamespacedSidecarSetStatusUpdate(newN, oldN *apps.NamespacedSidecarSet) field.ErrorList {
	return ValidateSidecarSetStatusUpdate(newN.View(), oldN.View())
}

func validateNamespacedScope(spec *apps.SidecarSetSpec) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Namespace != "" {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "namespace"),
			"a NamespacedSidecarSet selects pods of its own namespace only"))
	}
	if spec.NamespaceSelector != nil {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "namespaceSelector"),
			"a NamespacedSidecarSet selects pods of its own namespace only"))
	}
	return allErrs
}

func validateNamespacedName(namespace, name string) field.ErrorList {
	if namespace == "" || name == "" {
		return nil // ValidateObjectMeta requires both
	}
	joined := apps.NamespacedName(namespace, name)
	if len(joined) <= nameMaxLength {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), name, fmt.Sprintf(
		"must be no more than %d characters in namespace %q: pods and revisions name it %q, at most %d characters",
		nameMaxLength-len(namespace)-1, namespace, joined, nameMaxLength))}
}
