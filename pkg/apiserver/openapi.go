package apiserver

import (
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	generatedopenapi "github.com/sidecarset/apiserver/pkg/generated/openapi"
)

// admissionReviewModel is the OpenAPI model name of admission.k8s.io/v1 AdmissionReview, which has
// no generated definition upstream.
const admissionReviewModel = "io.k8s.api.admission.v1.AdmissionReview"

// GetOpenAPIDefinitions returns the generated definitions plus an opaque AdmissionReview.
func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := generatedopenapi.GetOpenAPIDefinitions(ref)
	defs[admissionReviewModel] = common.OpenAPIDefinition{
		Schema: spec.Schema{
			SchemaProps: spec.SchemaProps{
				Description: "AdmissionReview describes an admission review request/response.",
				Type:        []string{"object"},
			},
			VendorExtensible: spec.VendorExtensible{
				Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true},
			},
		},
	}
	return defs
}
