package podfields

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ContainerErrors are the errors ValidateContainers finds, by container, so that a caller can
// report its own rules for each container next to kube-apiserver's.
type ContainerErrors struct {
	// Containers holds the errors of each container, in order.
	Containers []field.ErrorList
	// HostPorts holds the host ports bound twice among the containers, which come after the
	// containers' own errors.
	HostPorts field.ErrorList
	// InitContainers holds the errors of each init container, in order, its host ports bound twice
	// within it included.
	InitContainers []field.ErrorList
}

// ValidateContainers validates containers and init containers, reported under
// path.containers[i] and path.initContainers[i] (path is a SidecarSet's spec), as kube-apiserver
// validates them in a pod whose volumes are volumes (the valid volumes ValidateVolumes returns):
// the fields of each (an init container with restartPolicy Always is a native sidecar), names
// unique across both lists (a duplicate is reported where kube-apiserver reports it in a pod: on
// the second container, or on the init container), and host ports bound once among the containers
// (which run together) and within each init container. The rules that depend on the rest of the
// pod or on the cluster are left to kube-apiserver (see the package documentation).
func ValidateContainers(containers, initContainers []*corev1.Container, volumes map[string]*corev1.Volume, path *field.Path) ContainerErrors {
	var errs ContainerErrors
	names := sets.New[string]()
	paths := make([]*field.Path, len(containers))
	for i, c := range containers {
		paths[i] = path.Child("containers").Index(i)
		errs.Containers = append(errs.Containers, validateRegularContainer(c, names, volumes, paths[i]))
	}
	errs.HostPorts = validateHostPortConflicts(containers, paths)
	for i, c := range initContainers {
		p := path.Child("initContainers").Index(i)
		errs.InitContainers = append(errs.InitContainers, validateInitContainer(c, names, volumes, p))
	}
	return errs
}

// validateRegularContainer validates a container and reports its name if names has it; the name
// is added to names.
func validateRegularContainer(c *corev1.Container, names sets.Set[string], volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	allErrs := validateContainer(c, regularContainer, volumes, path)
	if names.Has(c.Name) {
		allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
	}
	names.Insert(c.Name)
	return allErrs
}

// validateInitContainer validates an init container, reports its name if names has it (a new,
// non-empty name is added to names) and its host ports bound twice.
func validateInitContainer(c *corev1.Container, names sets.Set[string], volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	allErrs := validateContainer(c, initContainerKind(c), volumes, path)
	if names.Has(c.Name) {
		allErrs = append(allErrs, field.Duplicate(path.Child("name"), c.Name))
	} else if c.Name != "" {
		names.Insert(c.Name)
	}
	return append(allErrs, validateHostPortConflicts([]*corev1.Container{c}, []*field.Path{path})...)
}

// initContainerKind tells a native sidecar (restartPolicy Always) from an init container that
// runs to completion.
func initContainerKind(c *corev1.Container) containerKind {
	if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		return nativeSidecar
	}
	return initContainer
}

// validateHostPortConflicts reports a host port (protocol, host IP, port) used twice among
// containers, which all run in the same pod at the same time.
func validateHostPortConflicts(containers []*corev1.Container, paths []*field.Path) field.ErrorList {
	var allErrs field.ErrorList
	used := sets.New[string]()
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if used.Has(key) {
				allErrs = append(allErrs, field.Duplicate(paths[ci].Child("ports").Index(pi).Child("hostPort"), key))
			}
			used.Insert(key)
		}
	}
	return allErrs
}
