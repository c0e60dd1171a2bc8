// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/sidecarset/apiserver/pkg/apis/apps
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1
// +groupName=apps.kruise.io
// +k8s:openapi-model-package=io.kruise.apps.v1beta1

// Package v1beta1 is the preferred wire version of the apps.kruise.io SidecarSet. Its JSON is
// OpenKruise's apps.kruise.io/v1beta1 SidecarSet: the custom version is spec.customVersion instead
// of a label, and a namespace is selected by spec.namespaceSelector only. It is served from the
// same storage as v1alpha1 and converts to and from it without loss (see conversion.go).
package v1beta1
