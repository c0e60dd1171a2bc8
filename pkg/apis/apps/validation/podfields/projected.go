package podfields

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Service account token lifetimes kube-apiserver accepts in a projected volume.
const (
	minTokenExpirationSeconds     = 10 * 60
	maxTokenExpirationSeconds     = 1 << 32
	defaultTokenExpirationSeconds = 3600
)

func validateDownwardAPIVolume(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	d := src.DownwardAPI
	allErrs := validateFileMode(d.DefaultMode, path.Child("defaultMode"))
	for i := range d.Items {
		allErrs = append(allErrs, validateDownwardAPIVolumeFile(&d.Items[i], path.Child("items").Index(i))...)
	}
	return allErrs
}

// validateDownwardAPIVolumeFile requires a relative path, one of fieldRef (a pod metadata field)
// and resourceFieldRef (a resource of a named container) and a valid mode.
func validateDownwardAPIVolumeFile(file *corev1.DownwardAPIVolumeFile, path *field.Path) field.ErrorList {
	allErrs := validateRequired(file.Path, path.Child("path"))
	allErrs = append(allErrs, validateLocalNonReservedPath(file.Path, path.Child("path"))...)
	switch {
	case file.FieldRef != nil:
		allErrs = append(allErrs, validateObjectFieldSelector(file.FieldRef, volumeFieldPaths, path.Child("fieldRef"))...)
		if file.ResourceFieldRef != nil {
			allErrs = append(allErrs, field.Invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case file.ResourceFieldRef != nil:
		allErrs = append(allErrs, validateResourceFieldSelector(file.ResourceFieldRef, true, path.Child("resourceFieldRef"))...)
	default:
		allErrs = append(allErrs, field.Required(path, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(allErrs, validateFileMode(file.Mode, path.Child("mode"))...)
}

// validateProjected validates a projected volume: its default mode and its sources, one kind per
// source, with file paths unique across sources (reported on the volume). The clusterTrustBundle
// and podCertificate sources are not checked: kube-apiserver 1.36 drops them while their features
// (ClusterTrustBundleProjection, PodCertificateRequest) are off, as they are by default.
func validateProjected(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	p := src.Projected
	allErrs := validateFileMode(p.DefaultMode, path.Child("defaultMode"))
	paths := sets.New[string]()
	unique := func(file, value string) {
		if file == "" {
			return
		}
		if paths.Has(file) {
			allErrs = append(allErrs, field.Invalid(path, value, "conflicting duplicate paths"))
		}
		paths.Insert(file)
	}
	for i, s := range p.Sources {
		sp := path.Child("sources").Index(i)
		n := 0
		if s.Secret != nil {
			n++
			allErrs = append(allErrs, validateRequired(s.Secret.Name, sp.Child("secret", "name"))...)
			allErrs = append(allErrs, validateKeyToPaths(s.Secret.Items, sp.Child("secret", "items"))...)
			for _, item := range s.Secret.Items {
				unique(item.Path, s.Secret.Name)
			}
		}
		if s.ConfigMap != nil {
			n++
			allErrs = append(allErrs, validateRequired(s.ConfigMap.Name, sp.Child("configMap", "name"))...)
			allErrs = append(allErrs, validateKeyToPaths(s.ConfigMap.Items, sp.Child("configMap", "items"))...)
			for _, item := range s.ConfigMap.Items {
				unique(item.Path, s.ConfigMap.Name)
			}
		}
		if s.DownwardAPI != nil {
			n++
			for j := range s.DownwardAPI.Items {
				file := &s.DownwardAPI.Items[j]
				allErrs = append(allErrs, validateDownwardAPIVolumeFile(file, sp.Child("downwardAPI", "items").Index(j))...)
				unique(file.Path, file.Path)
			}
		}
		if s.ServiceAccountToken != nil {
			n++
			allErrs = append(allErrs, validateServiceAccountToken(s.ServiceAccountToken, sp.Child("serviceAccountToken"))...)
		}
		if n > 1 {
			allErrs = append(allErrs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

// validateServiceAccountToken requires a lifetime between ten minutes and 2^32 seconds (one hour
// by default) and a relative path. That the pod has a service account is the pod's problem (the
// ServiceAccount admission plugin gives it one).
func validateServiceAccountToken(t *corev1.ServiceAccountTokenProjection, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	expiration := int64(defaultTokenExpirationSeconds)
	if t.ExpirationSeconds != nil {
		expiration = *t.ExpirationSeconds
	}
	if expiration < minTokenExpirationSeconds {
		allErrs = append(allErrs, field.Invalid(path.Child("expirationSeconds"), expiration, "may not specify a duration less than 10 minutes"))
	}
	if expiration > maxTokenExpirationSeconds {
		allErrs = append(allErrs, field.Invalid(path.Child("expirationSeconds"), expiration, "may not specify a duration larger than 2^32 seconds"))
	}
	if t.Path == "" {
		return append(allErrs, field.Required(path.Child("path"), ""))
	}
	return append(allErrs, validateLocalNonReservedPath(t.Path, path.Child("path"))...)
}
