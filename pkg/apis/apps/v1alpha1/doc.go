// +k8s:openapi-gen=true
// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/sidecarset/apiserver/pkg/apis/apps
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1
// +groupName=apps.kruise.io
// +k8s:openapi-model-package=io.kruise.apps.v1alpha1

// Package v1alpha1 is the wire version of the apps.kruise.io API. Its JSON is identical to
// OpenKruise's apps.kruise.io/v1alpha1 SidecarSet, so objects and pod annotations written by
// either system are understood by the other.
package v1alpha1
