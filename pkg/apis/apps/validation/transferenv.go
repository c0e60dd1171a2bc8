package validation

import (
	"strings"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateFieldRef validates the fieldRef of a transferEnv source as OpenKruise does, with the
// words of Kubernetes' downward API helpers that OpenKruise returns ("error converting fieldPath:
// unsupported pod version", "field label not supported", "field path not supported"): apiVersion
// v1 and a fieldPath metadata.labels['<key>'] or metadata.annotations['<key>'] with a qualified
// key (annotation keys are lower-cased first).
func validateFieldRef(ref *corev1.ObjectFieldSelector, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIVersion == "" {
		allErrs = append(allErrs, field.Required(path.Child("apiVersion"), ""))
	}
	if ref.FieldPath == "" {
		allErrs = append(allErrs, field.Required(path.Child("fieldPath"), ""))
	}
	if len(allErrs) > 0 {
		return allErrs
	}
	p := path.Child("fieldPath")
	if why := convertFieldRef(ref.APIVersion, ref.FieldPath); why != "" {
		return field.ErrorList{field.Invalid(p, ref.FieldPath, "error converting fieldPath: "+why)}
	}
	base, key, _ := apps.SplitSubscriptedPath(ref.FieldPath)
	if base == "metadata.annotations" {
		key = strings.ToLower(key)
	}
	for _, msg := range utilvalidation.IsQualifiedName(key) {
		allErrs = append(allErrs, field.Invalid(p, key, msg))
	}
	return allErrs
}

// convertFieldRef says why a transferEnv fieldRef has no value to read, "" when it has one.
func convertFieldRef(apiVersion, fieldPath string) string {
	if apiVersion != "v1" {
		return "unsupported pod version: " + apiVersion
	}
	base, _, ok := apps.SplitSubscriptedPath(fieldPath)
	switch {
	case !ok:
		return "field label not supported: " + fieldPath
	case base != "metadata.annotations" && base != "metadata.labels":
		return "field path not supported: " + base
	}
	return ""
}
