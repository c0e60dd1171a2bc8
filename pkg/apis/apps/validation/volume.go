package validation

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxFileMode is the largest file mode a volume may set (0777).
const maxFileMode = 0777

// validateVolumes validates spec.volumes and returns the valid ones by name, for the container
// volume references.
func validateVolumes(volumes []corev1.Volume, path *field.Path) (map[string]*corev1.Volume, field.ErrorList) {
	byName := map[string]*corev1.Volume{}
	var allErrs field.ErrorList
	for i := range volumes {
		v := &volumes[i]
		p := path.Index(i)
		nameErrs := validateDNSLabel(v.Name, p.Child("name"))
		if len(nameErrs) == 0 && byName[v.Name] != nil {
			nameErrs = append(nameErrs, field.Duplicate(p.Child("name"), v.Name))
		}
		if len(nameErrs) == 0 {
			byName[v.Name] = v
		}
		allErrs = append(allErrs, nameErrs...)
		allErrs = append(allErrs, validateVolumeSource(&v.VolumeSource, p)...)
	}
	return byName, allErrs
}

// validateVolumeSource requires exactly one source and checks the required fields of the common
// sources; kube-apiserver validates the rest when the volume is injected into a pod.
func validateVolumeSource(src *corev1.VolumeSource, path *field.Path) field.ErrorList {
	switch n := countSources(src); {
	case n == 0:
		return field.ErrorList{field.Required(path, "must specify a volume type")}
	case n > 1:
		return field.ErrorList{field.Forbidden(path, "may not specify more than 1 volume type")}
	}
	var allErrs field.ErrorList
	switch {
	case src.HostPath != nil:
		allErrs = append(allErrs, validateRequired(src.HostPath.Path, path.Child("hostPath", "path"))...)
	case src.PersistentVolumeClaim != nil:
		allErrs = append(allErrs, validateRequired(src.PersistentVolumeClaim.ClaimName,
			path.Child("persistentVolumeClaim", "claimName"))...)
	case src.EmptyDir != nil:
		if l := src.EmptyDir.SizeLimit; l != nil && l.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(path.Child("emptyDir", "sizeLimit"), l.String(), "must be greater than or equal to 0"))
		}
	case src.ConfigMap != nil:
		p := path.Child("configMap")
		allErrs = append(allErrs, validateRequired(src.ConfigMap.Name, p.Child("name"))...)
		allErrs = append(allErrs, validateFileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeyToPaths(src.ConfigMap.Items, p.Child("items"))...)
	case src.Secret != nil:
		p := path.Child("secret")
		allErrs = append(allErrs, validateRequired(src.Secret.SecretName, p.Child("secretName"))...)
		allErrs = append(allErrs, validateFileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		allErrs = append(allErrs, validateKeyToPaths(src.Secret.Items, p.Child("items"))...)
	}
	return allErrs
}

// countSources counts the set (non-nil pointer) fields of a VolumeSource.
func countSources(src *corev1.VolumeSource) int {
	v := reflect.ValueOf(src).Elem()
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

// validateKeyToPaths validates the items of a configMap or secret volume.
func validateKeyToPaths(items []corev1.KeyToPath, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, item := range items {
		p := path.Index(i)
		allErrs = append(allErrs, validateRequired(item.Key, p.Child("key"))...)
		if item.Path == "" {
			allErrs = append(allErrs, field.Required(p.Child("path"), ""))
		} else {
			allErrs = append(allErrs, validateLocalDescendingPath(item.Path, p.Child("path"))...)
		}
		allErrs = append(allErrs, validateFileMode(item.Mode, p.Child("mode"))...)
	}
	return allErrs
}

func validateFileMode(mode *int32, path *field.Path) field.ErrorList {
	if mode != nil && (*mode < 0 || *mode > maxFileMode) {
		return field.ErrorList{field.Invalid(path, *mode, "must be a number between 0 and 0777 (octal), both inclusive")}
	}
	return nil
}

// validateLocalDescendingPath requires a relative path without "..".
func validateLocalDescendingPath(p string, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if strings.HasPrefix(p, "/") {
		allErrs = append(allErrs, field.Invalid(path, p, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(p, path)...)
}

// validatePathNoBacksteps rejects a ".." path element.
func validatePathNoBacksteps(p string, path *field.Path) field.ErrorList {
	for _, item := range strings.Split(strings.ReplaceAll(p, `\`, "/"), "/") {
		if item == ".." {
			return field.ErrorList{field.Invalid(path, p, "must not contain '..'")}
		}
	}
	return nil
}

func validateRequired(value string, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return nil
}

// validateDNSLabel requires a DNS-1123 label.
func validateDNSLabel(value string, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(path, value, msg))
	}
	return allErrs
}
