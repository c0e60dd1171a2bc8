package podfields

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	propagationModes   = []corev1.MountPropagationMode{corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone}
	recursiveReadOnlys = []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible}
)

// validateVolumeMounts requires mounts of valid volumes of the SidecarSet (as OpenKruise does: a
// sidecar brings the volumes it mounts) on unique paths that no volume device of the container
// uses, relative sub-paths without "..", and propagation and recursive read-only modes the
// container may use.
func validateVolumeMounts(c *corev1.Container, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	deviceNames, devicePaths := namesAndPaths(c.VolumeDevices, func(d corev1.VolumeDevice) (string, string) { return d.Name, d.DevicePath })
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := path.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		if volumes[m.Name] == nil {
			allErrs = append(allErrs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPaths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPaths.Insert(m.MountPath)
		if deviceNames.Has(m.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), m.Name, "must not already exist in volumeDevices"))
		}
		if devicePaths.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		allErrs = append(allErrs, validateSubPaths(m, p)...)
		if m.MountPropagation != nil {
			allErrs = append(allErrs, validateMountPropagation(*m.MountPropagation, c, p.Child("mountPropagation"))...)
		}
		allErrs = append(allErrs, validateRecursiveReadOnly(m, p.Child("recursiveReadOnly"))...)
	}
	return allErrs
}

// validateSubPaths requires relative subPath and subPathExpr without "..", not both.
func validateSubPaths(m corev1.VolumeMount, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if m.SubPath != "" {
		allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, path.Child("subPath"))...)
	}
	if m.SubPathExpr != "" {
		if m.SubPath != "" {
			allErrs = append(allErrs, field.Invalid(path.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, path.Child("subPathExpr"))...)
	}
	return allErrs
}

// validateMountPropagation requires a known mode, Bidirectional only in privileged containers.
func validateMountPropagation(mode corev1.MountPropagationMode, c *corev1.Container, path *field.Path) field.ErrorList {
	allErrs := validateSupported(mode, propagationModes, path)
	privileged := c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged
	if mode == corev1.MountPropagationBidirectional && !privileged {
		allErrs = append(allErrs, field.Forbidden(path, "Bidirectional mount propagation is available only to privileged containers"))
	}
	return allErrs
}

// validateRecursiveReadOnly allows IfPossible and Enabled only on read-only mounts without
// propagation.
func validateRecursiveReadOnly(m corev1.VolumeMount, path *field.Path) field.ErrorList {
	rro := m.RecursiveReadOnly
	if rro == nil {
		return nil
	}
	if errs := validateSupported(*rro, recursiveReadOnlys, path); len(errs) > 0 {
		return errs
	}
	if *rro == corev1.RecursiveReadOnlyDisabled {
		return nil
	}
	var allErrs field.ErrorList
	if !m.ReadOnly {
		allErrs = append(allErrs, field.Forbidden(path, "may only be specified when readOnly is true"))
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		allErrs = append(allErrs, field.Forbidden(path, "may only be specified when mountPropagation is None or not specified"))
	}
	return allErrs
}

// validateVolumeDevices requires devices of valid PersistentVolumeClaim or ephemeral volumes of
// the SidecarSet, on unique paths without ".." that no volume mount of the container uses.
func validateVolumeDevices(c *corev1.Container, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountNames, mountPaths := namesAndPaths(c.VolumeMounts, func(m corev1.VolumeMount) (string, string) { return m.Name, m.MountPath })
	names, devicePaths := sets.New[string](), sets.New[string]()
	for i, d := range c.VolumeDevices {
		p := path.Index(i)
		if d.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		if names.Has(d.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		}
		switch v := volumes[d.Name]; {
		case v == nil:
			allErrs = append(allErrs, field.NotFound(p.Child("name"), d.Name))
		case v.PersistentVolumeClaim == nil && v.Ephemeral == nil:
			allErrs = append(allErrs, field.Invalid(p.Child("name"), d.Name,
				"can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if d.DevicePath == "" {
			allErrs = append(allErrs, field.Required(p.Child("devicePath"), ""))
		}
		if devicePaths.Has(d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		}
		if d.DevicePath != "" && len(validatePathNoBacksteps(d.DevicePath, p)) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("devicePath"), d.DevicePath, "can not contain backsteps ('..')"))
		} else {
			devicePaths.Insert(d.DevicePath)
		}
		if mountNames.Has(d.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		if mountPaths.Has(d.DevicePath) {
			allErrs = append(allErrs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist as a path in volumeMounts"))
		}
		if d.Name != "" {
			names.Insert(d.Name)
		}
	}
	return allErrs
}

// namesAndPaths returns the volume names of mounts or devices and, as kube-apiserver compares
// them, the path of the last entry of each name.
func namesAndPaths[T any](entries []T, get func(T) (string, string)) (sets.Set[string], sets.Set[string]) {
	byName := make(map[string]string, len(entries))
	for _, e := range entries {
		name, path := get(e)
		byName[name] = path
	}
	paths := sets.New[string]()
	for _, p := range byName {
		paths.Insert(p)
	}
	return sets.KeySet(byName), paths
}
