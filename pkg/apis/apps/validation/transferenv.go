package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateFieldRef validates the fieldRef of a transferEnv source as OpenKruise does: apiVersion
// v1 and a fieldPath that is in plain or is metadata.labels['<key>'] or
// metadata.annotations['<key>'] with a qualified key (annotation keys are lower-cased first).
func validateFieldRef(ref *corev1.ObjectFieldSelector, plain sets.Set[string], path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIVersion == "" {
		allErrs = append(allErrs, field.Required(path.Child("apiVersion"), ""))
	} else if ref.APIVersion != "v1" {
		allErrs = append(allErrs, field.Invalid(path.Child("apiVersion"), ref.APIVersion, "unsupported pod version: "+ref.APIVersion))
	}
	if ref.FieldPath == "" {
		allErrs = append(allErrs, field.Required(path.Child("fieldPath"), ""))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	p := path.Child("fieldPath")
	base, key, ok := splitSubscript(ref.FieldPath)
	switch {
	case ok && base == "metadata.annotations":
		key = strings.ToLower(key)
	case ok && base == "metadata.labels":
	case ok:
		return field.ErrorList{field.Invalid(p, ref.FieldPath, "does not support subscript")}
	case plain.Has(ref.FieldPath):
		return nil
	default:
		supported := append(sets.List(plain), "metadata.annotations['<KEY>']", "metadata.labels['<KEY>']")
		return field.ErrorList{field.NotSupported(p, ref.FieldPath, supported)}
	}
	for _, msg := range utilvalidation.IsQualifiedName(key) {
		allErrs = append(allErrs, field.Invalid(p, key, msg))
	}
	return allErrs
}

// splitSubscript splits "metadata.labels['k']" into "metadata.labels" and "k" (package podfields
// has the same helper for the downward API).
func splitSubscript(fieldPath string) (base, key string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	base, key, found := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !found || base == "" {
		return fieldPath, "", false
	}
	return base, key, true
}
