package v1beta1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// addFieldLabelConversions accepts the field selectors of v1alpha1. spec.namespace has no field
// in v1beta1; it selects the SidecarSets whose scope is one namespace written as v1alpha1's
// spec.namespace, as at v1alpha1.
func addFieldLabelConversions(scheme *runtime.Scheme) error {
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("SidecarSet"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "spec.namespace":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		})
}
