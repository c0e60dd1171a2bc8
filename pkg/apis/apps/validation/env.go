package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// envFieldPaths are the downward API fields an env var may read, besides subscripted labels and
// annotations.
var envFieldPaths = sets.New(
	"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
	"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)

// envResourceFields are the resources an env var may read through resourceFieldRef, besides
// hugepages.
var envResourceFields = sets.New(
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
)

// validateEnv validates env var names and sources.
func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		p := path.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			allErrs = append(allErrs, validateEnvVarName(ev.Name, p.Child("name"))...)
		}
		if ev.ValueFrom == nil {
			continue
		}
		if ev.Value != "" {
			allErrs = append(allErrs, field.Invalid(p.Child("valueFrom"), "", "may not be specified when `value` is not empty"))
		}
		allErrs = append(allErrs, validateEnvVarSource(ev.ValueFrom, p.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvVarName(name string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsEnvVarName(name) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	return allErrs
}

// validateEnvVarSource requires exactly one source and validates it.
func validateEnvVarSource(from *corev1.EnvVarSource, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	if ref := from.FieldRef; ref != nil {
		n++
		allErrs = append(allErrs, validateFieldRef(ref, envFieldPaths, path.Child("fieldRef"))...)
	}
	if ref := from.ResourceFieldRef; ref != nil {
		n++
		p := path.Child("resourceFieldRef", "resource")
		if ref.Resource == "" {
			allErrs = append(allErrs, field.Required(p, ""))
		} else if !envResourceFields.Has(ref.Resource) && !strings.HasPrefix(ref.Resource, "limits.hugepages-") &&
			!strings.HasPrefix(ref.Resource, "requests.hugepages-") {
			allErrs = append(allErrs, field.NotSupported(p, ref.Resource, sets.List(envResourceFields)))
		}
	}
	if ref := from.ConfigMapKeyRef; ref != nil {
		n++
		allErrs = append(allErrs, validateKeyRef(ref.Name, ref.Key, path.Child("configMapKeyRef"))...)
	}
	if ref := from.SecretKeyRef; ref != nil {
		n++
		allErrs = append(allErrs, validateKeyRef(ref.Name, ref.Key, path.Child("secretKeyRef"))...)
	}
	if ref := from.FileKeyRef; ref != nil {
		n++
		p := path.Child("fileKeyRef")
		allErrs = append(allErrs, validateRequired(ref.VolumeName, p.Child("volumeName"))...)
		allErrs = append(allErrs, validateRequired(ref.Path, p.Child("path"))...)
		allErrs = append(allErrs, validateRequired(ref.Key, p.Child("key"))...)
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Invalid(path, "",
			"must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case n > 1:
		allErrs = append(allErrs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

// validateKeyRef validates a configMap or secret key reference.
func validateKeyRef(name, key string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(name, path.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(path.Child("key"), ""))
	}
	for _, msg := range utilvalidation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(path.Child("key"), key, msg))
	}
	return allErrs
}

// validateEnvFrom requires exactly one source per entry and a valid prefix.
func validateEnvFrom(envFrom []corev1.EnvFromSource, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ef := range envFrom {
		p := path.Index(i)
		if ef.Prefix != "" {
			allErrs = append(allErrs, validateEnvVarName(ef.Prefix, p.Child("prefix"))...)
		}
		n := 0
		if ef.ConfigMapRef != nil {
			n++
			allErrs = append(allErrs, validateRequired(ef.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if ef.SecretRef != nil {
			n++
			allErrs = append(allErrs, validateRequired(ef.SecretRef.Name, p.Child("secretRef", "name"))...)
		}
		switch {
		case n == 0:
			allErrs = append(allErrs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		case n > 1:
			allErrs = append(allErrs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

// validateFieldRef validates a downward API field selector: apiVersion v1 and a fieldPath that is
// in plain or is metadata.labels['<key>'] or metadata.annotations['<key>'] with a qualified key
// (annotation keys are lower-cased first).
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

// splitSubscript splits "metadata.labels['k']" into "metadata.labels" and "k".
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
