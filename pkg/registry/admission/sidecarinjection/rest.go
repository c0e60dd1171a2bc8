// Package sidecarinjection serves pod injection as a create-only resource,
// POST /apis/admission.kruise.io/v1/sidecarinjections, whose body and response are
// admission.k8s.io/v1 AdmissionReviews. kube-apiserver reaches it as a mutating webhook through the
// aggregation layer, so the call is authenticated and authorized like any API request and needs
// no webhook certificate of its own.
package sidecarinjection

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// Reviewer answers an admission request.
type Reviewer interface {
	// Review answers req, or fails when the right answer cannot be given (the error is the
	// response: kube-apiserver then applies the webhook's failurePolicy).
	Review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error)
}

// REST is the storage of sidecarinjections.
type REST struct {
	reviewer Reviewer
}

var (
	_ rest.Creater                  = &REST{}
	_ rest.Scoper                   = &REST{}
	_ rest.GroupVersionKindProvider = &REST{}
	_ rest.SingularNameProvider     = &REST{}
)

// NewREST returns the storage of sidecarinjections answering with reviewer.
func NewREST(reviewer Reviewer) *REST { return &REST{reviewer: reviewer} }

// New returns an empty AdmissionReview.
func (r *REST) New() runtime.Object { return &admissionv1.AdmissionReview{} }

// Destroy does nothing.
func (r *REST) Destroy() {}

// NamespaceScoped is false.
func (r *REST) NamespaceScoped() bool { return false }

// GetSingularName returns "sidecarinjection".
func (r *REST) GetSingularName() string { return "sidecarinjection" }

// GroupVersionKind says the resource speaks admission.k8s.io/v1 AdmissionReview.
func (r *REST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
}

// Create answers the review's request.
func (r *REST) Create(ctx context.Context, obj runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*admissionv1.AdmissionReview)
	if !ok || review.Request == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an AdmissionReview with a request, got %T", obj))
	}
	resp, err := r.reviewer.Review(ctx, review.Request)
	if err != nil {
		return nil, err
	}
	resp.UID = review.Request.UID
	return &admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}, nil
}
