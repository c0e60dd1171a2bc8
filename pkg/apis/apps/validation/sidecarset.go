package validation

import (
	"fmt"
	"regexp"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation/podfields"
)

const (
	nameMaxLength = 63
	nameFmt       = `^[a-zA-Z0-9\-]+$`
	nameMsg       = "sidecarset name must consist of alphanumeric characters or '-'"
)

var nameRegexp = regexp.MustCompile(nameFmt)

// ValidateSidecarSet validates a new, defaulted SidecarSet: its metadata and its spec.
func ValidateSidecarSet(ss *apps.SidecarSet) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&ss.ObjectMeta, false, validateName, field.NewPath("metadata"))
	allErrs = append(allErrs, validatePreDownload(ss.Annotations)...)
	allErrs = append(allErrs, validateInjectionPath(ss.Annotations)...)
	allErrs = append(allErrs, validateSpec(&ss.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateLimits(&ss.Spec, nil, field.NewPath("spec"))...)
}

// ValidateSidecarSetUpdate validates an update of a SidecarSet: the new spec as for a create (the
// limits only where the update changes a field), no added or renamed container, no changed
// upgradeType and no changed canary base. Metadata is left to the generic registry, which
// validates it on every update (the name cannot change), but for the pre-download and injection-path
// annotations.
func ValidateSidecarSetUpdate(newSS, oldSS *apps.SidecarSet) field.ErrorList {
	allErrs := validateSpec(&newSS.Spec, field.NewPath("spec"))
	allErrs = append(allErrs, validatePreDownload(newSS.Annotations)...)
	allErrs = append(allErrs, validateInjectionPath(newSS.Annotations)...)
	allErrs = append(allErrs, validateLimits(&newSS.Spec, &oldSS.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateContainersFrozen(newSS.Spec.Containers, oldSS.Spec.Containers,
		field.NewPath("spec", "containers"))...)
	return append(allErrs, validateCanaryBaseUnchanged(newSS, oldSS)...)
}

// ValidateSidecarSetStatusUpdate validates a status update: counters are non-negative and the
// collision count never decreases.
func ValidateSidecarSetStatusUpdate(newSS, oldSS *apps.SidecarSet) field.ErrorList {
	p := field.NewPath("status")
	s := newSS.Status
	allErrs := apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))
	for _, c := range []struct {
		name  string
		value int32
	}{
		{"matchedPods", s.MatchedPods}, {"updatedPods", s.UpdatedPods},
		{"readyPods", s.ReadyPods}, {"updatedReadyPods", s.UpdatedReadyPods},
	} {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), p.Child(c.name))...)
	}
	if c := s.CollisionCount; c != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*c), p.Child("collisionCount"))...)
		if old := oldSS.Status.CollisionCount; old != nil && *c < *old {
			allErrs = append(allErrs, field.Invalid(p.Child("collisionCount"), *c, "cannot be decremented"))
		}
	}
	return allErrs
}

// validateName is OpenKruise's name rule plus the DNS subdomain rule kube-apiserver applies to
// custom resources.
func validateName(name string, prefix bool) []string {
	var msgs []string
	if !nameRegexp.MatchString(name) {
		msgs = append(msgs, utilvalidation.RegexError(nameMsg, nameFmt, "example-com"))
	}
	if len(name) > nameMaxLength {
		msgs = append(msgs, utilvalidation.MaxLenError(nameMaxLength))
	}
	return append(msgs, apivalidation.NameIsDNSSubdomain(name, prefix)...)
}

// validateSpec validates everything in a spec that needs no other object.
func validateSpec(spec *apps.SidecarSetSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(path.Child("selector"), "no selector defined for SidecarSet"))
	} else {
		allErrs = append(allErrs, validateSelector(spec.Selector, path.Child("selector"))...)
	}
	allErrs = append(allErrs, validateNamespace(spec, path)...)
	allErrs = append(allErrs, validateInjectionStrategy(&spec.InjectionStrategy, path.Child("injectionStrategy"))...)
	allErrs = append(allErrs, validateUpdateStrategy(&spec.UpdateStrategy, path.Child("updateStrategy"))...)
	if l := spec.RevisionHistoryLimit; l != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*l), path.Child("revisionHistoryLimit"))...)
	}
	return append(allErrs, validateInjected(spec, path)...)
}

// validateInjected validates what a SidecarSet puts into pods, the part a revision records:
// volumes, init containers, containers and patchPodMetadata.
func validateInjected(spec *apps.SidecarSetSpec, path *field.Path) field.ErrorList {
	volumes, allErrs := podfields.ValidateVolumes(spec.Volumes, path.Child("volumes"))
	allErrs = append(allErrs, validateContainers(spec, volumes, path)...)
	return append(allErrs, validatePatchPodMetadata(spec.PatchPodMetadata, path.Child("patchPodMetadata"))...)
}

// validateSelector requires a valid, non-empty label selector.
func validateSelector(sel *metav1.LabelSelector, path *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, path)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(path, sel, "empty selector is not valid for sidecarset."))
	}
	return allErrs
}

// validateNamespace validates the v1alpha1 namespace and the namespaceSelector, which exclude
// each other.
func validateNamespace(spec *apps.SidecarSetSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Namespace != "" {
		for _, msg := range apivalidation.ValidateNamespaceName(spec.Namespace, false) {
			allErrs = append(allErrs, field.Invalid(path.Child("namespace"), spec.Namespace, msg))
		}
		if spec.NamespaceSelector != nil {
			allErrs = append(allErrs, field.Invalid(path.Child("namespace"), spec.Namespace,
				"namespace and namespaceSelector are mutually exclusive"))
		}
	}
	if spec.NamespaceSelector != nil {
		allErrs = append(allErrs, validateSelector(spec.NamespaceSelector, path.Child("namespaceSelector"))...)
	}
	return allErrs
}

// validateInjectionStrategy validates the injected revision; its existence is the caller's check.
func validateInjectionStrategy(s *apps.SidecarSetInjectionStrategy, path *field.Path) field.ErrorList {
	r := s.Revision
	if r == nil {
		return nil
	}
	p := path.Child("revision")
	var allErrs field.ErrorList
	if r.RevisionName == nil && r.CustomVersion == nil {
		allErrs = append(allErrs, field.Required(p, "revisionName and customVersion cannot be empty simultaneously"))
	}
	switch r.Policy {
	case "", apps.AlwaysSidecarSetInjectRevisionPolicy, apps.PartialSidecarSetInjectRevisionPolicy:
	default:
		allErrs = append(allErrs, field.NotSupported(p.Child("policy"), r.Policy, []apps.SidecarSetInjectRevisionPolicy{
			apps.AlwaysSidecarSetInjectRevisionPolicy, apps.PartialSidecarSetInjectRevisionPolicy}))
	}
	return allErrs
}

// withDetail sets the detail of e, for error types whose constructor takes none.
func withDetail(e *field.Error, format string, args ...interface{}) *field.Error {
	e.Detail = fmt.Sprintf(format, args...)
	return e
}
