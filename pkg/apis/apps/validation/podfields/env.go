package podfields

import (
	"strings"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// volumeFieldPaths are the downward API fields a downwardAPI volume file may read.
var volumeFieldPaths = sets.New("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid")

// downwardAPILabels are the field labels the v1 downward API converts, besides subscripted labels
// and annotations; spec.host is the old name of spec.nodeName.
var downwardAPILabels = sets.New(
	"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
	"spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName",
	"status.phase", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
)

// resourceFields are the resources a resourceFieldRef may read, besides hugepages.
var resourceFields = sets.New(
	"limits.cpu", "limits.memory", "limits.ephemeral-storage",
	"requests.cpu", "requests.memory", "requests.ephemeral-storage",
)

const (
	hugePagesRequestsField = "requests.hugepages-"
	hugePagesLimitsField   = "limits.hugepages-"
)

var (
	cpuDivisors  = sets.New("1m", "1")
	sizeDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

// validateEnv validates env var names (any printable ASCII but '=') and sources.
func validateEnv(env []corev1.EnvVar, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		p := path.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			allErrs = append(allErrs, validateEnvVarName(ev.Name, p.Child("name"))...)
		}
		if ev.ValueFrom != nil {
			allErrs = append(allErrs, validateEnvVarSource(ev.ValueFrom, ev.Value != "", p.Child("valueFrom"))...)
		}
	}
	return allErrs
}

func validateEnvVarName(name string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsRelaxedEnvVarName(name) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	return allErrs
}

// validateEnvVarSource requires exactly one source, and no value next to it, and validates it.
func validateEnvVarSource(from *corev1.EnvVarSource, hasValue bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	if ref := from.FieldRef; ref != nil {
		n++
		allErrs = append(allErrs, validateObjectFieldSelector(ref, envFieldPaths, path.Child("fieldRef"))...)
	}
	if ref := from.ResourceFieldRef; ref != nil {
		n++
		allErrs = append(allErrs, validateResourceFieldSelector(ref, false, path.Child("resourceFieldRef"))...)
	}
	if ref := from.ConfigMapKeyRef; ref != nil {
		n++
		allErrs = append(allErrs, validateKeySelector(ref.Name, ref.Key, path.Child("configMapKeyRef"))...)
	}
	if ref := from.SecretKeyRef; ref != nil {
		n++
		allErrs = append(allErrs, validateKeySelector(ref.Name, ref.Key, path.Child("secretKeyRef"))...)
	}
	if ref := from.FileKeyRef; ref != nil {
		n++
		allErrs = append(allErrs, validateFileKeySelector(ref, path.Child("fileKeyRef"))...)
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Invalid(path, "",
			"must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"))
	case hasValue:
		allErrs = append(allErrs, field.Invalid(path, "", "may not be specified when `value` is not empty"))
	case n > 1:
		allErrs = append(allErrs, field.Invalid(path, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

// validateKeySelector validates a configMap or secret key reference: a DNS subdomain name and a
// valid key.
func validateKeySelector(name, key string, path *field.Path) field.ErrorList {
	allErrs := validateDNSSubdomainName(name, false, path.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(path.Child("key"), ""))
	}
	for _, msg := range utilvalidation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(path.Child("key"), key, msg))
	}
	return allErrs
}

// validateFileKeySelector validates an env var read from a file: a key that is an env var name,
// a DNS label volume name and a path without "..". That the volume is an emptyDir of the pod is
// the pod's problem (it may come from the pod).
func validateFileKeySelector(ref *corev1.FileKeySelector, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.Key == "" {
		allErrs = append(allErrs, field.Required(path.Child("key"), ""))
	} else {
		allErrs = append(allErrs, validateEnvVarName(ref.Key, path.Child("key"))...)
	}
	allErrs = append(allErrs, validateDNSLabel(ref.VolumeName, path.Child("volumeName"))...)
	if ref.Path == "" {
		allErrs = append(allErrs, field.Required(path.Child("path"), ""))
	} else {
		allErrs = append(allErrs, validatePathNoBacksteps(ref.Path, path.Child("path"))...)
	}
	return allErrs
}

// validateEnvFrom requires exactly one source per entry, valid names and a valid prefix.
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
			allErrs = append(allErrs, validateEnvSourceName(ef.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if ef.SecretRef != nil {
			n++
			allErrs = append(allErrs, validateEnvSourceName(ef.SecretRef.Name, p.Child("secretRef", "name"))...)
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

// validateEnvSourceName requires the name of a ConfigMap or Secret (kube-apiserver accepts a
// trailing '-', as for a generateName prefix).
func validateEnvSourceName(name string, path *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return validateDNSSubdomainName(name, true, path)
}

// validateObjectFieldSelector validates a pod downward API field selector as kube-apiserver
// does: apiVersion v1, a field label the v1 downward API converts and one of plain, or a
// subscripted label or annotation with a qualified key (annotation keys are lower-cased).
func validateObjectFieldSelector(ref *corev1.ObjectFieldSelector, plain sets.Set[string], path *field.Path) field.ErrorList {
	switch {
	case ref.APIVersion == "":
		return field.ErrorList{field.Required(path.Child("apiVersion"), "")}
	case ref.FieldPath == "":
		return field.ErrorList{field.Required(path.Child("fieldPath"), "")}
	}
	label, err := convertDownwardAPIFieldLabel(ref.APIVersion, ref.FieldPath)
	if err != "" {
		return field.ErrorList{field.Invalid(path.Child("fieldPath"), ref.FieldPath, "error converting fieldPath: "+err)}
	}
	base, key, subscripted := apps.SplitSubscriptedPath(label)
	switch {
	case subscripted && base == "metadata.annotations":
		return validateQualifiedName(strings.ToLower(key), path)
	case subscripted:
		return validateQualifiedName(key, path)
	case !plain.Has(label):
		return field.ErrorList{field.NotSupported(path.Child("fieldPath"), label, sets.List(plain))}
	}
	return nil
}

// convertDownwardAPIFieldLabel returns the internal field label of a v1 downward API field path,
// or why it has none.
func convertDownwardAPIFieldLabel(apiVersion, label string) (string, string) {
	if apiVersion != "v1" {
		return "", "unsupported pod version: " + apiVersion
	}
	if base, _, ok := apps.SplitSubscriptedPath(label); ok {
		if base == "metadata.annotations" || base == "metadata.labels" {
			return label, ""
		}
		return "", "field label does not support subscript: " + label
	}
	switch {
	case label == "spec.host":
		return "spec.nodeName", ""
	case !downwardAPILabels.Has(label):
		return "", "field label not supported: " + label
	}
	return label, ""
}

// validateResourceFieldSelector validates a downward API resource selector: a container name for
// volume files, a readable resource and a divisor that suits it.
func validateResourceFieldSelector(ref *corev1.ResourceFieldSelector, volume bool, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case volume && ref.ContainerName == "":
		allErrs = append(allErrs, field.Required(path.Child("containerName"), ""))
	case ref.Resource == "":
		allErrs = append(allErrs, field.Required(path.Child("resource"), ""))
	case !resourceFields.Has(ref.Resource) && !strings.HasPrefix(ref.Resource, hugePagesRequestsField) &&
		!strings.HasPrefix(ref.Resource, hugePagesLimitsField):
		allErrs = append(allErrs, field.NotSupported(path.Child("resource"), ref.Resource, sets.List(resourceFields)))
	}
	return append(allErrs, validateResourceDivisor(ref.Resource, ref.Divisor, path.Child("divisor"))...)
}

// validateResourceDivisor allows 1m and 1 for cpu and 1 or a power of 1000 or 1024 for sizes.
func validateResourceDivisor(name string, divisor resource.Quantity, path *field.Path) field.ErrorList {
	if divisor.IsZero() {
		return nil
	}
	d := divisor.String()
	var allErrs field.ErrorList
	switch name {
	case "limits.cpu", "requests.cpu":
		if !cpuDivisors.Has(d) {
			allErrs = append(allErrs, field.Invalid(path, name, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case "limits.memory", "requests.memory":
		if !sizeDivisors.Has(d) {
			allErrs = append(allErrs, field.Invalid(path, name, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
		}
	case "limits.ephemeral-storage", "requests.ephemeral-storage":
		if !sizeDivisors.Has(d) {
			allErrs = append(allErrs, field.Invalid(path, name, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"))
		}
	}
	if (strings.HasPrefix(name, hugePagesRequestsField) || strings.HasPrefix(name, hugePagesLimitsField)) && !sizeDivisors.Has(d) {
		allErrs = append(allErrs, field.Invalid(path, name, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
	}
	return allErrs
}
