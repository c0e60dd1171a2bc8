package validation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumeMounts requires mounts of declared volumes on unique paths that no volume device
// of the container uses.
func validateVolumeMounts(c *corev1.Container, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	devicePaths := sets.New[string]()
	for _, d := range c.VolumeDevices {
		devicePaths.Insert(d.DevicePath)
	}
	mountPaths := sets.New[string]()
	for i, m := range c.VolumeMounts {
		p := path.Index(i)
		allErrs = append(allErrs, validateVolumeRef(m.Name, volumes, p.Child("name"))...)
		switch {
		case m.MountPath == "":
			allErrs = append(allErrs, field.Required(p.Child("mountPath"), ""))
		case mountPaths.Has(m.MountPath):
			allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		case devicePaths.Has(m.MountPath):
			allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must not already exist as a path in volumeDevices"))
		}
		mountPaths.Insert(m.MountPath)
		if m.SubPath != "" && m.SubPathExpr != "" {
			allErrs = append(allErrs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
		}
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, p.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, p.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			allErrs = append(allErrs, validateEnum(*m.MountPropagation, propagationModes, p.Child("mountPropagation"))...)
		}
		allErrs = append(allErrs, validateRecursiveReadOnly(m, p)...)
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
	p := path.Child("recursiveReadOnly")
	if errs := validateEnum(*rro, recursiveReadOnlys, p); len(errs) > 0 {
		return errs
	}
	if *rro == corev1.RecursiveReadOnlyDisabled {
		return nil
	}
	if !m.ReadOnly {
		return field.ErrorList{field.Forbidden(p, "may only be specified when readOnly is true")}
	}
	if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
		return field.ErrorList{field.Forbidden(p, "may only be specified when mountPropagation is None or not specified")}
	}
	return nil
}

// validateVolumeDevices requires devices of declared PersistentVolumeClaim or ephemeral volumes,
// on unique paths that no volume mount of the container uses.
func validateVolumeDevices(c *corev1.Container, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	mountNames, mountPaths := sets.New[string](), sets.New[string]()
	for _, m := range c.VolumeMounts {
		mountNames.Insert(m.Name)
		mountPaths.Insert(m.MountPath)
	}
	names, devicePaths := sets.New[string](), sets.New[string]()
	for i, d := range c.VolumeDevices {
		p := path.Index(i)
		errs := validateVolumeRef(d.Name, volumes, p.Child("name"))
		if v := volumes[d.Name]; len(errs) == 0 && v.PersistentVolumeClaim == nil && v.Ephemeral == nil {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name,
				"can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must be unique"))
		} else if mountNames.Has(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, "must not already exist in volumeMounts"))
		}
		names.Insert(d.Name)
		switch {
		case d.DevicePath == "":
			errs = append(errs, field.Required(p.Child("devicePath"), ""))
		case devicePaths.Has(d.DevicePath):
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must be unique"))
		case mountPaths.Has(d.DevicePath):
			errs = append(errs, field.Invalid(p.Child("devicePath"), d.DevicePath, "must not already exist in volumeMounts"))
		}
		devicePaths.Insert(d.DevicePath)
		errs = append(errs, validatePathNoBacksteps(d.DevicePath, p.Child("devicePath"))...)
		allErrs = append(allErrs, errs...)
	}
	return allErrs
}

// validateVolumeRef requires the name of a volume declared in spec.volumes.
func validateVolumeRef(name string, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(path, "")}
	case volumes[name] == nil:
		return field.ErrorList{field.NotFound(path, name)}
	}
	return nil
}
