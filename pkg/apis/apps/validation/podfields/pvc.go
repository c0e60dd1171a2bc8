package podfields

import (
	"reflect"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	accessModes = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)
	volumeModes = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
	// templateMetaFields are the ObjectMeta fields a volume claim template may set.
	templateMetaFields = sets.New("Annotations", "Labels")
)

// validateEphemeral validates the claim template of a generic ephemeral volume.
func validateEphemeral(src *corev1.VolumeSource, _ string, path *field.Path) field.ErrorList {
	tmpl := src.Ephemeral.VolumeClaimTemplate
	p := path.Child("volumeClaimTemplate")
	if tmpl == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	allErrs := validateTemplateObjectMeta(&tmpl.ObjectMeta, p.Child("metadata"))
	return append(allErrs, validateClaimSpec(&tmpl.Spec, p.Child("spec"))...)
}

// validateTemplateObjectMeta allows valid labels and annotations only.
func validateTemplateObjectMeta(meta *metav1.ObjectMeta, path *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateAnnotations(meta.Annotations, path.Child("annotations"))
	allErrs = append(allErrs, metav1validation.ValidateLabels(meta.Labels, path.Child("labels"))...)
	v := reflect.ValueOf(*meta)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if templateMetaFields.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(f.Name)
		allErrs = append(allErrs, field.Forbidden(path.Child(string(unicode.ToLower(r))+f.Name[n:]), "cannot be set"))
	}
	return allErrs
}

// validateClaimSpec validates a PersistentVolumeClaim spec as kube-apiserver validates a new claim.
func validateClaimSpec(spec *corev1.PersistentVolumeClaimSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(path.Child("accessModes"), "at least 1 access mode is required"))
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector,
			metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
	}
	allErrs = append(allErrs, validateAccessModes(spec.AccessModes, path.Child("accessModes"))...)
	storagePath := path.Child("resources").Key(string(corev1.ResourceStorage))
	if storage, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		allErrs = append(allErrs, field.Required(storagePath, ""))
	} else if storage.Cmp(resource.Quantity{}) <= 0 {
		allErrs = append(allErrs, field.Invalid(storagePath, storage.String(), notPositive))
	}
	if c := spec.StorageClassName; c != nil && *c != "" {
		allErrs = append(allErrs, validateDNSSubdomainName(*c, false, path.Child("storageClassName"))...)
	}
	if m := spec.VolumeMode; m != nil && !volumeModes.Has(*m) {
		allErrs = append(allErrs, field.NotSupported(path.Child("volumeMode"), *m, sets.List(volumeModes)))
	}
	allErrs = append(allErrs, validateDataSources(spec, path)...)
	if c := spec.VolumeAttributesClassName; c != nil && *c != "" {
		allErrs = append(allErrs, validateDNSSubdomainName(*c, false, path.Child("volumeAttributesClassName"))...)
	}
	return allErrs
}

// validateAccessModes requires known modes, ReadWriteOncePod alone.
func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rwop, others := false, false
	for _, m := range modes {
		if !accessModes.Has(m) {
			allErrs = append(allErrs, field.NotSupported(path, m, sets.List(accessModes)))
		}
		switch {
		case m == corev1.ReadWriteOncePod:
			rwop = true
		case accessModes.Has(m):
			others = true
		}
	}
	if rwop && others {
		allErrs = append(allErrs, field.Forbidden(path, "may not use ReadWriteOncePod with other access modes"))
	}
	return allErrs
}

// validateDataSources validates dataSource and dataSourceRef and that they agree (a
// dataSourceRef in another namespace excludes dataSource).
func validateDataSources(spec *corev1.PersistentVolumeClaimSpec, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ds, ref := spec.DataSource, spec.DataSourceRef
	if ds != nil {
		allErrs = append(allErrs, validateTypedReference(ds.APIGroup, ds.Kind, ds.Name, path.Child("dataSource"))...)
	}
	if ref != nil {
		allErrs = append(allErrs, validateTypedReference(ref.APIGroup, ref.Kind, ref.Name, path.Child("dataSourceRef"))...)
		if ns := ref.Namespace; ns != nil && *ns != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*ns, false) {
				allErrs = append(allErrs, field.Invalid(path.Child("dataSourceRef", "namespace"), *ns, msg))
			}
		}
	}
	switch {
	case ref != nil && ref.Namespace != nil && *ref.Namespace != "":
		if ds != nil {
			allErrs = append(allErrs, field.Invalid(path, path.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	case ds != nil && ref != nil:
		if !reflect.DeepEqual(ds.APIGroup, ref.APIGroup) || ds.Kind != ref.Kind || ds.Name != ref.Name {
			allErrs = append(allErrs, field.Invalid(path, path.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	return allErrs
}

// validateTypedReference requires a name and a kind, PersistentVolumeClaim in the core group,
// and a DNS subdomain API group otherwise.
func validateTypedReference(apiGroup *string, kind, name string, path *field.Path) field.ErrorList {
	allErrs := validateRequired(name, path.Child("name"))
	allErrs = append(allErrs, validateRequired(kind, path.Child("kind"))...)
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		allErrs = append(allErrs, field.Invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(group) {
			allErrs = append(allErrs, field.Invalid(path.Child("apiGroup"), group, msg))
		}
	}
	return allErrs
}
