package validation

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// containerKind says which Kubernetes container rules apply.
type containerKind int

const (
	// regularContainer is a container of spec.containers.
	regularContainer containerKind = iota
	// initContainer is an init container that runs to completion.
	initContainer
	// nativeSidecar is an init container with restartPolicy Always.
	nativeSidecar
)

var (
	pullPolicies        = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	terminationPolicies = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	protocols           = []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP}
	propagationModes    = []corev1.MountPropagationMode{corev1.MountPropagationNone, corev1.MountPropagationHostToContainer, corev1.MountPropagationBidirectional}
	recursiveReadOnlys  = []corev1.RecursiveReadOnlyMode{corev1.RecursiveReadOnlyDisabled, corev1.RecursiveReadOnlyIfPossible, corev1.RecursiveReadOnlyEnabled}
)

// validateContainer applies the rules kube-apiserver applies to a container of a pod whose
// volumes are the SidecarSet's; the name's uniqueness is checked by the caller.
func validateContainer(c *corev1.Container, kind containerKind, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	allErrs := validateDNSLabel(c.Name, path.Child("name"))
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(path.Child("image"), ""))
	} else if strings.TrimSpace(c.Image) != c.Image {
		allErrs = append(allErrs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	allErrs = append(allErrs, validateEnum(c.ImagePullPolicy, pullPolicies, path.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateEnum(c.TerminationMessagePolicy, terminationPolicies, path.Child("terminationMessagePolicy"))...)
	allErrs = append(allErrs, validateRestartPolicy(c.RestartPolicy, kind, path.Child("restartPolicy"))...)
	allErrs = append(allErrs, validatePorts(c.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, path.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, volumes, path.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateVolumeDevices(c, volumes, path.Child("volumeDevices"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, path.Child("resources"))...)
	return append(allErrs, validateProbesAndLifecycle(c, kind, path)...)
}

// validateEnum requires value to be one of valid.
func validateEnum[T ~string](value T, valid []T, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, v := range valid {
		if v == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, value, valid)}
}

// validateRestartPolicy allows restartPolicy Always on init containers only.
func validateRestartPolicy(policy *corev1.ContainerRestartPolicy, kind containerKind, path *field.Path) field.ErrorList {
	switch {
	case policy == nil:
		return nil
	case kind == regularContainer:
		return field.ErrorList{field.Forbidden(path, "may not be set for non-init containers")}
	case *policy != corev1.ContainerRestartPolicyAlways:
		return field.ErrorList{field.NotSupported(path, *policy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways})}
	}
	return nil
}

// validatePorts validates port numbers, names (unique in the container) and protocols.
func validatePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			for _, msg := range utilvalidation.IsValidPortName(port.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(p.Child("containerPort"), ""))
		}
		allErrs = append(allErrs, validatePortNum(int(port.ContainerPort), port.ContainerPort != 0, p.Child("containerPort"))...)
		allErrs = append(allErrs, validatePortNum(int(port.HostPort), port.HostPort != 0, p.Child("hostPort"))...)
		allErrs = append(allErrs, validateEnum(port.Protocol, protocols, p.Child("protocol"))...)
		if port.HostIP != "" {
			allErrs = append(allErrs, utilvalidation.IsValidIP(p.Child("hostIP"), port.HostIP)...)
		}
	}
	return allErrs
}

func validatePortNum(port int, set bool, path *field.Path) field.ErrorList {
	if !set {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidPortNum(port) {
		allErrs = append(allErrs, field.Invalid(path, port, msg))
	}
	return allErrs
}

// validatePortNumOrName validates the port of a probe or lifecycle handler.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.String {
		var allErrs field.ErrorList
		for _, msg := range utilvalidation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(path, port.StrVal, msg))
		}
		return allErrs
	}
	return validatePortNum(int(port.IntVal), true, path)
}

// validateResources requires known resource names, non-negative quantities and requests not
// above limits.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, list := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sets.List(sets.KeySet(list.list)) {
			q := list.list[name]
			p := path.Child(list.name).Key(string(name))
			if !isContainerResourceName(string(name)) {
				allErrs = append(allErrs, field.Invalid(p, name,
					"must be a standard resource for containers or a fully qualified extended resource name"))
			}
			if q.Sign() < 0 {
				allErrs = append(allErrs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
			}
			if limit, ok := r.Limits[name]; ok && list.name == "requests" && q.Cmp(limit) > 0 {
				allErrs = append(allErrs, field.Invalid(p, q.String(), "must be less than or equal to "+string(name)+" limit of "+limit.String()))
			}
		}
	}
	return allErrs
}

// isContainerResourceName reports whether name is cpu, memory, ephemeral-storage, a hugepages
// size or a domain-qualified extended resource outside kubernetes.io.
func isContainerResourceName(name string) bool {
	switch {
	case name == string(corev1.ResourceCPU), name == string(corev1.ResourceMemory), name == string(corev1.ResourceEphemeralStorage):
		return true
	case strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return len(utilvalidation.IsQualifiedName(name)) == 0
	case !strings.Contains(name, "/"), strings.Contains(name, "kubernetes.io/"), strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix):
		return false
	}
	return len(utilvalidation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+name)) == 0
}

// validateNonnegative validates an optional int32 seconds-like field.
func validateNonnegative(v int32, path *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(v), path)
}
