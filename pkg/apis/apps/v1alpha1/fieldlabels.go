package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

func addFieldLabelConversions(scheme *runtime.Scheme) error {
	err := scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("SidecarSet"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "spec.namespace":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		})
	if err != nil {
		return err
	}
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("NamespacedSidecarSet"),
		func(label, value string) (string, string, error) {
			switch label {
			case "metadata.name", "metadata.namespace":
				return label, value, nil
			}
			return "", "", fmt.Errorf("field label not supported: %s", label)
		})
}
