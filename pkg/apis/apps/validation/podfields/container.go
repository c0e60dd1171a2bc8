package podfields

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
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

// maxRestartRules and maxRestartRuleExitCodes bound restartPolicyRules as kube-apiserver does.
const (
	maxRestartRules         = 20
	maxRestartRuleExitCodes = 255
)

var (
	pullPolicies        = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	terminationPolicies = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	protocols           = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	resizeResources     = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	resizePolicies      = []corev1.ResourceResizeRestartPolicy{corev1.NotRequired, corev1.RestartContainer}
	restartRuleActions  = []corev1.ContainerRestartRuleAction{
		corev1.ContainerRestartRuleActionRestart, corev1.ContainerRestartRuleActionRestartAllContainers}
	restartRuleOperators = []corev1.ContainerRestartRuleOnExitCodesOperator{
		corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn}
)

// validateContainer applies the rules kube-apiserver applies to a container of a pod whose
// volumes are the valid volumes of the SidecarSet (Kubernetes' validateContainerCommon, the rules
// of its container kind and the pod-only image rule). The name's uniqueness and host port
// conflicts between containers are checked by ValidateContainers. Rules that depend on the rest
// of the pod (its restartPolicy, terminationGracePeriodSeconds, hostUsers, os, resourceClaims,
// volumes named by fileKeyRef) and the cluster's --allow-privileged are left to kube-apiserver.
func validateContainer(c *corev1.Container, kind containerKind, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	allErrs := validateDNSLabel(c.Name, path.Child("name"))
	allErrs = append(allErrs, validateImage(c.Image, path.Child("image"))...)
	allErrs = append(allErrs, ValidateEnum(c.TerminationMessagePolicy, terminationPolicies, path.Child("terminationMessagePolicy"))...)
	allErrs = append(allErrs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, path.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, path.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, volumes, path.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateVolumeDevices(c, volumes, path.Child("volumeDevices"))...)
	allErrs = append(allErrs, ValidateEnum(c.ImagePullPolicy, pullPolicies, path.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, path.Child("resources"))...)
	allErrs = append(allErrs, validateResizePolicy(c.ResizePolicy, kind, path.Child("resizePolicy"))...)
	allErrs = append(allErrs, validateSecurityContext(c.SecurityContext, path.Child("securityContext"))...)
	allErrs = append(allErrs, validateRestartPolicy(c, kind, path)...)
	return append(allErrs, validateProbesAndLifecycle(c, kind, path)...)
}

// validateImage requires an image without leading or trailing whitespace.
func validateImage(image string, path *field.Path) field.ErrorList {
	switch {
	case image == "":
		return field.ErrorList{field.Required(path, "")}
	case strings.TrimSpace(image) != image:
		return field.ErrorList{field.Invalid(path, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

// ValidateEnum requires value to be one of valid: Required when empty, NotSupported (listing
// valid) otherwise, kube-apiserver's words; the SidecarSet rules use it too.
func ValidateEnum[T ~string](value T, valid []T, path *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return validateOptionalEnum(value, valid, path)
}

// validateOptionalEnum requires value, when set, to be one of valid.
func validateOptionalEnum[T ~string](value T, valid []T, path *field.Path) field.ErrorList {
	if value == "" {
		return nil
	}
	for _, v := range valid {
		if v == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, value, valid)}
}

// validateRestartPolicy keeps OpenKruise's rule: restartPolicy (and so restartPolicyRules) on init
// containers only, and only Always there. This is stricter than kube-apiserver 1.35+ with the
// ContainerRestartRules feature, which also accepts Never and OnFailure and regular containers
// with a restartPolicy: a SidecarSet container is either a sidecar or a native sidecar.
func validateRestartPolicy(c *corev1.Container, kind containerKind, path *field.Path) field.ErrorList {
	policy, rules := c.RestartPolicy, c.RestartPolicyRules
	var allErrs field.ErrorList
	switch {
	case kind == regularContainer:
		if policy != nil {
			allErrs = append(allErrs, field.Forbidden(path.Child("restartPolicy"), "may not be set for non-init containers"))
		}
		if len(rules) > 0 {
			allErrs = append(allErrs, field.Forbidden(path.Child("restartPolicyRules"), "may not be set for non-init containers"))
		}
	case policy == nil:
		if len(rules) > 0 {
			allErrs = append(allErrs, field.Required(path.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
		}
	case *policy != corev1.ContainerRestartPolicyAlways:
		allErrs = append(allErrs, field.NotSupported(path.Child("restartPolicy"), *policy,
			[]corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
	default:
		allErrs = append(allErrs, validateRestartRules(rules, path.Child("restartPolicyRules"))...)
	}
	return allErrs
}

// validateRestartRules validates the restartPolicyRules of a native sidecar.
func validateRestartRules(rules []corev1.ContainerRestartRule, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(rules) > maxRestartRules {
		allErrs = append(allErrs, field.TooMany(path, len(rules), maxRestartRules))
	}
	for i, rule := range rules {
		p := path.Index(i)
		allErrs = append(allErrs, validateSupported(rule.Action, restartRuleActions, p.Child("action"))...)
		if rule.ExitCodes == nil {
			allErrs = append(allErrs, field.Required(p.Child("exitCodes"), "must be specified"))
			continue
		}
		allErrs = append(allErrs, validateSupported(rule.ExitCodes.Operator, restartRuleOperators, p.Child("exitCodes", "operator"))...)
		if n := len(rule.ExitCodes.Values); n > maxRestartRuleExitCodes {
			allErrs = append(allErrs, field.TooMany(p.Child("exitCodes", "values"), n, maxRestartRuleExitCodes))
		}
	}
	return allErrs
}

// validateSupported requires value to be one of valid, the empty value included.
func validateSupported[T ~string](value T, valid []T, path *field.Path) field.ErrorList {
	for _, v := range valid {
		if v == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, value, valid)}
}

// validateResizePolicy validates the in-place resize policies: cpu or memory once each, a known
// restart policy, and no RestartContainer on an init container that runs to completion. (A
// RestartContainer policy in a pod with restartPolicy Never is the pod's problem.)
func validateResizePolicy(policies []corev1.ContainerResizePolicy, kind containerKind, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, p := range policies {
		ip := path.Index(i)
		if seen.Has(p.ResourceName) {
			allErrs = append(allErrs, field.Duplicate(ip, p.ResourceName))
		}
		seen.Insert(p.ResourceName)
		allErrs = append(allErrs, ValidateEnum(p.ResourceName, resizeResources, ip.Child("resourceName"))...)
		allErrs = append(allErrs, ValidateEnum(p.RestartPolicy, resizePolicies, ip.Child("restartPolicy"))...)
		if kind == initContainer && p.RestartPolicy == corev1.RestartContainer {
			allErrs = append(allErrs, field.Invalid(ip.Child("restartPolicy"), p.RestartPolicy,
				"must not be set to 'RestartContainer' for non-sidecar initContainers"))
		}
	}
	return allErrs
}

// validateContainerPorts validates port numbers, names (unique in the container) and protocols.
func validateContainerPorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := path.Index(i)
		if port.Name != "" {
			msgs := utilvalidation.IsValidPortName(port.Name)
			for _, msg := range msgs {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), port.Name, msg))
			}
			if len(msgs) == 0 && names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), port.Name))
			}
			names.Insert(port.Name)
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(p.Child("containerPort"), ""))
		} else {
			allErrs = append(allErrs, validatePortNum(int(port.ContainerPort), p.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			allErrs = append(allErrs, validatePortNum(int(port.HostPort), p.Child("hostPort"))...)
		}
		allErrs = append(allErrs, ValidateEnum(port.Protocol, protocols, p.Child("protocol"))...)
	}
	return allErrs
}

func validatePortNum(port int, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsValidPortNum(port) {
		allErrs = append(allErrs, field.Invalid(path, port, msg))
	}
	return allErrs
}
