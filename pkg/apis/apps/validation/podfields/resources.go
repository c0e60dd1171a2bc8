package podfields

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	negativeMsg   = "must be greater than or equal to 0"
	notIntegerMsg = "must be an integer"
	notPositive   = "must be greater than zero"
)

// standardResources are the unqualified resource names Kubernetes knows (quota names included);
// only cpu, memory, ephemeral-storage and hugepages-* may be used by containers.
var standardResources = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceStorage, corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts,
	corev1.ResourceServicesLoadBalancers,
)

// integerResources are the native resources counted in whole units (extended resources are too).
var integerResources = sets.New[corev1.ResourceName](
	corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
	corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
	corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
)

// validateResources validates a container's resources as kube-apiserver validates them once the
// pod defaults have copied limits into the requests that are not set: known resource names,
// non-negative (and, for extended resources, integer) quantities, hugepages in whole pages next to
// cpu or memory, requests not above limits (equal for resources that cannot be overcommitted) and
// well-formed claim references. Whether a claim is in the pod's resourceClaims is the pod's
// problem. Errors are reported on the fields the user set, not on the defaulted requests.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, name := range sets.List(sets.KeySet(r.Limits)) {
		allErrs = append(allErrs, validateResourceEntry(name, r.Limits[name], limPath.Key(string(name)))...)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || isHugePages(name)
	}
	for _, name := range sets.List(sets.KeySet(r.Requests)) {
		q, p := r.Requests[name], reqPath.Key(string(name))
		allErrs = append(allErrs, validateResourceEntry(name, q, p)...)
		allErrs = append(allErrs, validateRequestAgainstLimit(name, q, r.Limits, p, limPath)...)
		cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
		hugePages = hugePages || isHugePages(name)
	}
	if hugePages && !cpuOrMemory {
		allErrs = append(allErrs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	return append(allErrs, validateResourceClaims(r.Claims, path.Child("claims"))...)
}

// validateResourceEntry validates one name and quantity of limits or requests.
func validateResourceEntry(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	allErrs := validateContainerResourceName(name, path)
	allErrs = append(allErrs, validateResourceQuantity(name, q, path)...)
	if isHugePages(name) && !isHugePagesDivisible(name, q) {
		allErrs = append(allErrs, field.Invalid(path, q.String(),
			fmt.Sprintf("%s is not positive integer multiple of %s", q.String(), name)))
	}
	return allErrs
}

// validateRequestAgainstLimit requires a request not above its limit, equal to it for resources
// that cannot be overcommitted (hugepages, extended resources), which must have a limit.
func validateRequestAgainstLimit(name corev1.ResourceName, q resource.Quantity, limits corev1.ResourceList, path, limPath *field.Path) field.ErrorList {
	limit, ok := limits[name]
	switch {
	case !ok && !isOvercommitAllowed(name):
		return field.ErrorList{field.Required(limPath.Key(string(name)), "Limit must be set for non overcommitable resources")}
	case !ok:
		return nil
	case q.Cmp(limit) != 0 && !isOvercommitAllowed(name):
		return field.ErrorList{field.Invalid(path, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String()))}
	case q.Cmp(limit) > 0:
		return field.ErrorList{field.Invalid(path, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String()))}
	}
	return nil
}

// validateContainerResourceName accepts cpu, memory, ephemeral-storage, hugepages-<size>, names in
// a kubernetes.io domain and extended resources (domain-qualified names outside kubernetes.io).
func validateContainerResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(path, name, msg))
	}
	qualified := strings.Contains(string(name), "/")
	if len(allErrs) == 0 && !qualified && !standardResources.Has(name) && !isHugePages(name) &&
		!strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix) {
		allErrs = append(allErrs, field.Invalid(path, name, "must be a standard resource type or fully qualified"))
	}
	switch {
	case !qualified:
		if !isStandardContainerResource(name) {
			allErrs = append(allErrs, field.Invalid(path, name, "must be a standard resource for containers"))
		}
	case !isNativeResource(name) && !isExtendedResource(name):
		allErrs = append(allErrs, field.Invalid(path, name, "doesn't follow extended resource name standard"))
	}
	return allErrs
}

// validateResourceQuantity requires a non-negative quantity, an integer for integer resources.
func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(path, q.String(), negativeMsg))
	}
	if (integerResources.Has(name) || isExtendedResource(name)) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(path, q, notIntegerMsg))
	}
	return allErrs
}

// validateResourceClaims validates the claim references of a container: names set, requests DNS
// labels, no claim (or claim request) referenced twice.
func validateResourceClaims(claims []corev1.ResourceClaim, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	keys := sets.New[string]()
	for i, claim := range claims {
		p := path.Index(i)
		if claim.Name == "" {
			allErrs = append(allErrs, field.Required(p, ""))
			continue
		}
		if keys.Has(claim.Name) {
			allErrs = append(allErrs, field.Duplicate(p, claim.Name)) // the whole claim is referenced already
			continue
		}
		key := claim.Name
		if claim.Request != "" {
			allErrs = append(allErrs, validateDNSLabelValue(claim.Request, p.Child("request"))...)
			key += "/" + claim.Request
		}
		switch {
		case keys.Has(key):
			allErrs = append(allErrs, field.Duplicate(p, key))
		case claim.Request == "":
			for other := range keys {
				if before, _, found := strings.Cut(other, "/"); found && before == claim.Name {
					allErrs = append(allErrs, field.Duplicate(p, claim.Name))
				}
			}
		}
		keys.Insert(key)
	}
	return allErrs
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// isHugePagesDivisible reports whether q is a whole number of pages of the size in name.
func isHugePagesDivisible(name corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

func isStandardContainerResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || isHugePages(name)
}

// isNativeResource reports whether name is unqualified or in a kubernetes.io domain.
func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResource reports whether name is a valid domain-qualified name outside kubernetes.io.
func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(utilvalidation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}

// isOvercommitAllowed reports whether requests may be below limits: native resources but hugepages.
func isOvercommitAllowed(name corev1.ResourceName) bool {
	return isNativeResource(name) && !isHugePages(name)
}
