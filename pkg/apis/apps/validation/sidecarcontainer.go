package validation

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation/podfields"
	"github.com/sidecarset/apiserver/pkg/resourceexpr"
)

// validateContainers validates spec.initContainers and spec.containers: at least one of them,
// the Kubernetes rules of package podfields (the fields of each, names unique across both lists,
// host ports) and the SidecarSet policies, each container's next to its Kubernetes errors.
func validateContainers(spec *apps.SidecarSetSpec, volumes map[string]*corev1.Volume, path *field.Path) field.ErrorList {
	if len(spec.InitContainers) == 0 && len(spec.Containers) == 0 {
		return field.ErrorList{field.Required(path.Child("containers"), "no initContainer or container defined for SidecarSet")}
	}
	kube := podfields.ValidateContainers(podContainers(spec.Containers), podContainers(spec.InitContainers), volumes, path)
	allErrs := validateSidecarContainers(spec.Containers, kube.Containers, path.Child("containers"))
	allErrs = append(allErrs, kube.HostPorts...)
	return append(allErrs, validateInitSidecarContainers(spec.InitContainers, kube.InitContainers, path.Child("initContainers"))...)
}

// podContainers returns the corev1.Container of each sidecar container.
func podContainers(cs []apps.SidecarContainer) []*corev1.Container {
	out := make([]*corev1.Container, len(cs))
	for i := range cs {
		out[i] = &cs[i].Container
	}
	return out
}

// validateSidecarContainers returns, for each container, its Kubernetes errors kube[i], then the
// errors of its policies and resourcesPolicy.
func validateSidecarContainers(cs []apps.SidecarContainer, kube []field.ErrorList, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range cs {
		c := &cs[i]
		p := path.Index(i)
		allErrs = append(allErrs, kube[i]...)
		allErrs = append(allErrs, validateSidecarPolicies(c, p)...)
		if c.ResourcesPolicy != nil {
			allErrs = append(allErrs, validateResourcesPolicy(c, p.Child("resourcesPolicy"))...)
		}
	}
	return allErrs
}

// validateInitSidecarContainers returns, for each init container, its Kubernetes errors kube[i],
// then the errors of its resourcesPolicy, which only a native sidecar may have.
func validateInitSidecarContainers(cs []apps.SidecarContainer, kube []field.ErrorList, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i := range cs {
		c := &cs[i]
		p := path.Index(i)
		allErrs = append(allErrs, kube[i]...)
		if c.ResourcesPolicy == nil {
			continue
		}
		if !isNativeSidecar(c) {
			allErrs = append(allErrs, field.Forbidden(p.Child("resourcesPolicy"),
				"resourcesPolicy is only supported for containers with RestartPolicy Always"))
		}
		allErrs = append(allErrs, validateResourcesPolicy(c, p.Child("resourcesPolicy"))...)
	}
	return allErrs
}

// isNativeSidecar reports whether an init container is a native sidecar (restartPolicy Always).
func isNativeSidecar(c *apps.SidecarContainer) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// validateSidecarPolicies validates the injection and upgrade policies of a container; as in
// OpenKruise they are not checked on init containers.
func validateSidecarPolicies(c *apps.SidecarContainer, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch c.PodInjectPolicy {
	case apps.BeforeAppContainerType, apps.AfterAppContainerType:
	default:
		allErrs = append(allErrs, field.Invalid(path.Child("podInjectPolicy"), c.PodInjectPolicy,
			fmt.Sprintf("unsupported pod inject policy, must be %s or %s", apps.BeforeAppContainerType, apps.AfterAppContainerType)))
	}
	switch c.ShareVolumePolicy.Type {
	case apps.ShareVolumePolicyEnabled, apps.ShareVolumePolicyDisabled:
	default:
		allErrs = append(allErrs, field.Invalid(path.Child("shareVolumePolicy", "type"), c.ShareVolumePolicy.Type,
			fmt.Sprintf("unsupported share volume policy, must be %s or %s", apps.ShareVolumePolicyEnabled, apps.ShareVolumePolicyDisabled)))
	}
	us := c.UpgradeStrategy
	allErrs = append(allErrs, podfields.ValidateEnum(us.UpgradeType, []apps.SidecarContainerUpgradeType{
		apps.SidecarContainerColdUpgrade, apps.SidecarContainerHotUpgrade}, path.Child("upgradeStrategy", "upgradeType"))...)
	if us.UpgradeType == apps.SidecarContainerHotUpgrade && us.HotUpgradeEmptyImage == "" {
		allErrs = append(allErrs, field.Required(path.Child("upgradeStrategy", "hotUpgradeEmptyImage"),
			"required for upgradeType HotUpgrade"))
	}
	if us.UpgradeType == apps.SidecarContainerHotUpgrade {
		allErrs = append(allErrs, validateHotUpgradePorts(c.Ports, path.Child("ports"))...)
	}
	for i, te := range c.TransferEnv {
		if from := te.SourceContainerNameFrom; from != nil && from.FieldRef != nil {
			allErrs = append(allErrs, validateFieldRef(from.FieldRef,
				path.Child("transferEnv").Index(i).Child("sourceContainerNameFrom", "fieldRef"))...)
		}
	}
	return allErrs
}

// validateHotUpgradePorts forbids host ports on a HotUpgrade sidecar: it runs as two containers
// (<name>-1 and <name>-2) in every pod, and a pod whose containers bind one host port twice is
// invalid.
func validateHotUpgradePorts(ports []corev1.ContainerPort, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, port := range ports {
		if port.HostPort != 0 {
			// Duplicate, as kube-apiserver reports the pod's second binding, with the reason.
			allErrs = append(allErrs, &field.Error{Type: field.ErrorTypeDuplicate, Field: path.Index(i).Child("hostPort").String(),
				BadValue: fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort),
				Detail:   "a HotUpgrade sidecar runs as two containers in the pod, which cannot both bind a host port"})
		}
	}
	return allErrs
}

// validateResourcesPolicy validates a resourcesPolicy: exclusive with resources, a mode, a name
// regex and at least one of limits and requests whose expressions use the right variable.
func validateResourcesPolicy(c *apps.SidecarContainer, path *field.Path) field.ErrorList {
	if len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 {
		return field.ErrorList{field.Forbidden(path, "resourcesPolicy and resources cannot be configured together")}
	}
	policy := c.ResourcesPolicy
	allErrs := podfields.ValidateEnum(policy.TargetContainersMode, []apps.TargetContainersModeType{
		apps.TargetContainersModeSum, apps.TargetContainersModeMax}, path.Child("targetContainersMode"))
	switch regex := policy.TargetContainersNameRegex; {
	case regex == nil:
		// absent: defaulted to ".*" when decoded
	case *regex == "":
		allErrs = append(allErrs, field.Required(path.Child("targetContainersNameRegex"), "invalid empty regex"))
	default:
		if _, err := regexp.Compile(*regex); err != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("targetContainersNameRegex"), *regex,
				fmt.Sprintf("invalid regex pattern: %v", err)))
		}
	}
	expr := policy.ResourcesExpr
	p := path.Child("resourcesExpr")
	if expr.Limits == nil && expr.Requests == nil {
		return append(allErrs, field.Required(p, "at least one of limits or requests must be configured"))
	}
	if l := expr.Limits; l != nil {
		allErrs = append(allErrs, validateExpression(l.CPU, resourceexpr.CPU, p.Child("limits", "cpu"))...)
		allErrs = append(allErrs, validateExpression(l.Memory, resourceexpr.Memory, p.Child("limits", "memory"))...)
	}
	if r := expr.Requests; r != nil {
		allErrs = append(allErrs, validateExpression(r.CPU, resourceexpr.CPU, p.Child("requests", "cpu"))...)
		allErrs = append(allErrs, validateExpression(r.Memory, resourceexpr.Memory, p.Child("requests", "memory"))...)
	}
	return allErrs
}

// validateExpression requires an empty expression or one that parses and passes Check with
// variable bound.
func validateExpression(expr, variable string, path *field.Path) field.ErrorList {
	if expr == "" {
		return nil
	}
	e, err := resourceexpr.Parse(expr)
	if err == nil {
		err = e.Check(variable)
	}
	if err != nil {
		return field.ErrorList{field.Invalid(path, expr, fmt.Sprintf("invalid expression: %v", err))}
	}
	return nil
}

// validateContainersFrozen forbids, on update, containers that did not exist and changes of a
// set upgradeType. Containers may be removed; init containers are not restricted.
func validateContainersFrozen(newCs, oldCs []apps.SidecarContainer, path *field.Path) field.ErrorList {
	oldTypes := make(map[string]apps.SidecarContainerUpgradeType, len(oldCs))
	for _, c := range oldCs {
		oldTypes[c.Name] = c.UpgradeStrategy.UpgradeType
	}
	var allErrs field.ErrorList
	for i, c := range newCs {
		p := path.Index(i)
		old, ok := oldTypes[c.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Forbidden(p.Child("name"),
				fmt.Sprintf("container %s is not found: containers cannot be added or renamed", c.Name)))
		case old != "" && c.UpgradeStrategy.UpgradeType != old:
			allErrs = append(allErrs, field.Invalid(p.Child("upgradeStrategy", "upgradeType"), c.UpgradeStrategy.UpgradeType,
				fmt.Sprintf("container %s upgradeType is immutable", c.Name)))
		}
	}
	return allErrs
}
