package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// validateInjectionPath validates the annotation by which a cluster SidecarSet asks for a path
// (apps.InjectionPathAnnotation): only the policy path can be asked for.
func validateInjectionPath(annotations map[string]string) field.ErrorList {
	v, ok := annotations[apps.InjectionPathAnnotation]
	if !ok || v == apps.InjectionPathPolicy {
		return nil
	}
	return field.ErrorList{field.NotSupported(field.NewPath("metadata", "annotations").Key(apps.InjectionPathAnnotation), v,
		[]string{apps.InjectionPathPolicy})}
}

// forbidInjectionPath refuses the annotation on a NamespacedSidecarSet: the SidecarSets served by
// policy first are few for the whole cluster (--max-policy-path-requests), and a namespace editor
// must not take them from the cluster's administrators.
func forbidInjectionPath(annotations map[string]string) field.ErrorList {
	if _, ok := annotations[apps.InjectionPathAnnotation]; !ok {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(apps.InjectionPathAnnotation),
		"only cluster SidecarSets can ask for a path: the policies served first are shared by the whole cluster")}
}
