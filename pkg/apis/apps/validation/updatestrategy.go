package validation

import (
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// validateUpdateStrategy validates the type, and the rolling update knobs only for RollingUpdate
// (a NotUpdate strategy may keep any leftover knobs, as in OpenKruise).
func validateUpdateStrategy(s *apps.SidecarSetUpdateStrategy, path *field.Path) field.ErrorList {
	switch s.Type {
	case apps.RollingUpdateSidecarSetStrategyType:
	case apps.NotUpdateSidecarSetStrategyType:
		return nil
	case "":
		return field.ErrorList{field.Required(path.Child("type"), "")}
	default:
		return field.ErrorList{field.NotSupported(path.Child("type"), s.Type, []apps.SidecarSetUpdateStrategyType{
			apps.RollingUpdateSidecarSetStrategyType, apps.NotUpdateSidecarSetStrategyType})}
	}
	var allErrs field.ErrorList
	if partitionIsSet(s.Partition) && s.Selector != nil {
		allErrs = append(allErrs, field.Forbidden(path.Child("partition"), "Partition and Selector cannot be used together"))
	}
	if s.Selector != nil {
		allErrs = append(allErrs, validateSelector(s.Selector, path.Child("selector"))...)
	}
	if s.Partition != nil {
		allErrs = append(allErrs, validateIntOrPercent(*s.Partition, path.Child("partition"))...)
	}
	if s.MaxUnavailable != nil {
		allErrs = append(allErrs, validateIntOrPercent(*s.MaxUnavailable, path.Child("maxUnavailable"))...)
	}
	allErrs = append(allErrs, validatePriorityStrategy(s.PriorityStrategy, path.Child("priorityStrategy"))...)
	return append(allErrs, validateScatterStrategy(s.ScatterStrategy, path.Child("scatterStrategy"))...)
}

// partitionIsSet reports whether a partition differs from the default int 0: any string (even
// "0%") or a non-zero int.
func partitionIsSet(p *intstr.IntOrString) bool {
	return p != nil && (p.Type == intstr.String || p.IntVal != 0)
}

// validateIntOrPercent requires a non-negative int or an integer percentage; values above 100%
// and 0 are accepted.
func validateIntOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var allErrs field.ErrorList
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(path, v.StrVal, msg))
		}
		return allErrs
	case intstr.Int:
		return apivalidation.ValidateNonnegativeField(int64(v.IntVal), path)
	}
	return field.ErrorList{field.Invalid(path, v, "must be an integer or percentage (e.g '5%')")}
}

// validatePriorityStrategy allows weight terms (weights 0-100 although OpenKruise's message says
// 1-100, non-empty valid selectors) or order terms (non-empty keys), not both.
func validatePriorityStrategy(ps *apps.UpdatePriorityStrategy, path *field.Path) field.ErrorList {
	if ps == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(ps.WeightPriority) > 0 && len(ps.OrderPriority) > 0 {
		allErrs = append(allErrs, field.Forbidden(path, "only one of weightPriority and orderPriority can be used"))
	}
	for i, w := range ps.WeightPriority {
		p := path.Child("weightPriority").Index(i)
		if w.Weight < 0 || w.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("weight"), w.Weight, "weight must be valid number in the range 1-100"))
		}
		sel := w.MatchSelector
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("matchSelector"), "selector can not be empty"))
		}
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(&sel,
			metav1validation.LabelSelectorValidationOptions{}, p.Child("matchSelector"))...)
	}
	for i, o := range ps.OrderPriority {
		if o.OrderedKey == "" {
			allErrs = append(allErrs, field.Required(path.Child("orderPriority").Index(i).Child("orderedKey"),
				"order key can not be empty"))
		}
	}
	return allErrs
}

// validateScatterStrategy requires non-empty keys and unique key/value pairs.
func validateScatterStrategy(s apps.UpdateScatterStrategy, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := map[apps.UpdateScatterTerm]bool{}
	for i, term := range s {
		p := path.Index(i)
		if term.Key == "" {
			allErrs = append(allErrs, field.Required(p.Child("key"), "key should not be empty"))
			continue
		}
		if seen[term] {
			allErrs = append(allErrs, withDetail(field.Duplicate(p, term.Key+":"+term.Value),
				"duplicated key=%v value=%v", term.Key, term.Value))
		}
		seen[term] = true
	}
	return allErrs
}
