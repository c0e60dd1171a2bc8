package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

const baseAnnotation = apps.SidecarSetBaseAnnotation

// IsCanary returns the name of the base SidecarSet a canary SidecarSet overrides, and whether ss
// is a canary: annotated apps.kruise.io/sidecarset-canary "true" with a non-empty
// apps.kruise.io/sidecarset-base.
func IsCanary(ss *apps.SidecarSet) (baseName string, ok bool) {
	return apps.CanaryBase(ss.Annotations)
}

// ValidateCanary validates a canary SidecarSet against its base, which the caller fetched: base
// is the base SidecarSet and baseErr the error fetching it (base nil and baseErr nil mean it was
// not fetched, which is fine only when the base would be ss itself). A canary may not be its own
// base, its base may not be a canary, and it must use updateStrategy NotUpdate. Nothing is checked
// when ss is not a canary.
func ValidateCanary(ss *apps.SidecarSet, base *apps.SidecarSet, baseErr error) field.ErrorList {
	baseName, ok := IsCanary(ss)
	if !ok {
		return nil
	}
	p := field.NewPath("metadata", "annotations").Key(baseAnnotation)
	var allErrs field.ErrorList
	switch {
	case baseName == ss.Name:
		allErrs = append(allErrs, field.Invalid(p, baseName, "base sidecarSet cannot be itself"))
	case baseErr != nil:
		allErrs = append(allErrs, field.Invalid(p, baseName, fmt.Sprintf("fetch base sidecarSet[%s] failed: %v", baseName, baseErr)))
	case base == nil:
		allErrs = append(allErrs, field.Invalid(p, baseName, fmt.Sprintf("fetch base sidecarSet[%s] failed: not found", baseName)))
	default:
		if _, baseIsCanary := IsCanary(base); baseIsCanary {
			allErrs = append(allErrs, field.Invalid(p, baseName, "base sidecarSet cannot be canary"))
		}
	}
	if t := ss.Spec.UpdateStrategy.Type; t != apps.NotUpdateSidecarSetStrategyType {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "updateStrategy", "type"), t,
			"RollingUpdate is not supported for canary sidecarSet"))
	}
	return allErrs
}

// validateCanaryBaseUnchanged forbids, on update, a canary whose base annotation differs from the
// old object's.
func validateCanaryBaseUnchanged(newSS, oldSS *apps.SidecarSet) field.ErrorList {
	baseName, ok := IsCanary(newSS)
	if !ok || oldSS.Annotations[baseAnnotation] == baseName {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "annotations").Key(baseAnnotation), baseName,
		fmt.Sprintf("annotations[%s] is immutable", baseAnnotation))}
}
