package validation

import (
	"encoding/json"
	"fmt"
	"regexp"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation/podfields"
)

var patchPolicies = []apps.SidecarSetPatchPolicyType{
	apps.SidecarSetRetainPatchPolicy, apps.SidecarSetOverwritePatchPolicy, apps.SidecarSetMergePatchJsonPatchPolicy,
}

// validatePatchPodMetadata validates each entry: annotations present and valid, a known policy,
// and no key patched by two entries.
func validatePatchPodMetadata(patches []apps.SidecarSetPatchPodMetadata, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, patch := range patches {
		p := path.Index(i)
		if len(patch.Annotations) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("annotations"), "no annotations defined for SidecarSet"))
		} else {
			allErrs = append(allErrs, apivalidation.ValidateAnnotations(patch.Annotations, p.Child("annotations"))...)
		}
		if patch.PatchPolicy == "" {
			allErrs = append(allErrs, field.Required(p.Child("patchPolicy"), "no patchPolicy defined for patchPodMetadata"))
		} else {
			allErrs = append(allErrs, podfields.ValidateEnum(patch.PatchPolicy, patchPolicies, p.Child("patchPolicy"))...)
		}
		for _, k := range sets.List(sets.KeySet(patch.Annotations)) {
			if seen.Has(k) {
				allErrs = append(allErrs, withDetail(field.Duplicate(p.Child("annotations").Key(k), k),
					"patch annotation[%s] already exist", k))
			}
			seen.Insert(k)
		}
	}
	return allErrs
}

// patchMetadataWhitelist is the JSON of the whitelist ConfigMap key.
type patchMetadataWhitelist struct {
	Rules []struct {
		// Selector selects the SidecarSets, by their labels, the rule applies to; nil means all.
		Selector *metav1.LabelSelector `json:"selector,omitempty"`
		// AllowedAnnotationKeyExprs are unanchored regular expressions of allowed annotation keys.
		AllowedAnnotationKeyExprs []string `json:"allowedAnnotationKeyExprs"`
	} `json:"rules"`
}

// ValidatePatchPodMetadataWhitelist checks the keys of spec.patchPodMetadata against the
// whitelist JSON (OpenKruise's SidecarSet_PatchPodMetadata_WhiteList format), nil when the
// ConfigMap or its key does not exist. The rules whose selector matches the SidecarSet's labels
// (or that have none) contribute their regular expressions; each key must match one of them
// anywhere in the key. Without a whitelist, or when no rule applies, every key is allowed if
// defaultsAllowed and none otherwise. A malformed whitelist rejects every patch.
func ValidatePatchPodMetadataWhitelist(ss *apps.SidecarSet, whitelistJSON *string, defaultsAllowed bool) field.ErrorList {
	path := field.NewPath("spec", "patchPodMetadata")
	if len(ss.Spec.PatchPodMetadata) == 0 {
		return nil
	}
	if whitelistJSON == nil {
		if defaultsAllowed {
			return nil
		}
		return field.ErrorList{field.Forbidden(path, "SidecarSet patch metadata whitelist not found")}
	}
	regs, err := applicableKeyRegexps(*whitelistJSON, labels.Set(ss.Labels))
	if err != nil {
		return field.ErrorList{field.InternalError(path, fmt.Errorf("invalid patch metadata whitelist: %w", err))}
	}
	if len(regs) == 0 {
		if defaultsAllowed {
			return nil
		}
		return field.ErrorList{field.Forbidden(path, "sidecarSet patch metadata annotation is not allowed")}
	}
	var allErrs field.ErrorList
	for i, patch := range ss.Spec.PatchPodMetadata {
		for _, k := range sets.List(sets.KeySet(patch.Annotations)) {
			if !matchAny(regs, k) {
				allErrs = append(allErrs, field.Forbidden(path.Index(i).Child("annotations").Key(k),
					fmt.Sprintf("sidecarSet patch metadata annotation(%s) is not allowed", k)))
			}
		}
	}
	return allErrs
}

// applicableKeyRegexps parses the whitelist and compiles the expressions of the rules that apply
// to a SidecarSet with the given labels.
func applicableKeyRegexps(whitelistJSON string, ssLabels labels.Set) ([]*regexp.Regexp, error) {
	var wl patchMetadataWhitelist
	if err := json.Unmarshal([]byte(whitelistJSON), &wl); err != nil {
		return nil, err
	}
	var regs []*regexp.Regexp
	for _, rule := range wl.Rules {
		if rule.Selector != nil {
			sel, err := metav1.LabelSelectorAsSelector(rule.Selector)
			if err != nil {
				return nil, err
			}
			if !sel.Matches(ssLabels) {
				continue
			}
		}
		for _, expr := range rule.AllowedAnnotationKeyExprs {
			reg, err := regexp.Compile(expr)
			if err != nil {
				return nil, err
			}
			regs = append(regs, reg)
		}
	}
	return regs, nil
}

func matchAny(regs []*regexp.Regexp, key string) bool {
	for _, reg := range regs {
		if reg.MatchString(key) {
			return true
		}
	}
	return false
}
