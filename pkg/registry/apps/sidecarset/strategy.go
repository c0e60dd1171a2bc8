// Package sidecarset holds the registry strategies of the sidecarsets resource: what happens to a
// SidecarSet on create and update (status reset, generation bump on spec change, OpenKruise hash
// annotations), its validation, its status subresource strategy and its table columns.
package sidecarset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
)

// Strategy implements create, update and delete behaviour for SidecarSets.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the SidecarSet strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{typer, names.SimpleNameGenerator}
}

// NamespaceScoped is false: SidecarSets are cluster-scoped.
func (Strategy) NamespaceScoped() bool { return false }

// GetResetFields says the main resource never sets status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
		fieldpath.APIVersion(v1beta1.SchemeGroupVersion.String()):  fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
}

// PrepareForCreate clears the status, starts the generation at 1 and stamps the hashes
// (stored.Create).
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	stored.Create(obj.(*apps.SidecarSet))
}

// PrepareForUpdate keeps the stored status, bumps the generation when the spec or the custom
// version label changes, and restamps the hashes (stored.Update).
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	stored.Update(obj.(*apps.SidecarSet), old.(*apps.SidecarSet))
}

// Validate validates a new SidecarSet.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSidecarSet(obj.(*apps.SidecarSet))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	ss := obj.(*apps.SidecarSet)
	return selectorWarnings(ss)
}

// selectorWarnings warn of a selector that requires no label: kube-apiserver cannot turn away,
// by labels, the pods it does not select, so every pod create calls the injection webhook.
func selectorWarnings(ss *apps.SidecarSet) []string {
	sel := ss.Spec.Selector
	if k, _ := apps.RequiredLabel(sel); apps.SelectsNoPod(sel) || k != "" {
		return nil
	}
	return []string{"spec.selector requires no label (only NotIn or DoesNotExist): every pod create in the namespaces it selects calls the injection webhook; " +
		"a matchLabels, In or Exists requirement lets kube-apiserver skip the other pods by their labels"}
}

// Canonicalize does nothing: the stored form is the defaulted form.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: PUT cannot create a SidecarSet.
func (Strategy) AllowCreateOnUpdate() bool { return false }

// AllowUnconditionalUpdate allows PUT without a resourceVersion, as for Deployments.
func (Strategy) AllowUnconditionalUpdate() bool { return true }

// ValidateUpdate validates an update of a SidecarSet.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSidecarSetUpdate(obj.(*apps.SidecarSet), old.(*apps.SidecarSet))
}

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	ss := obj.(*apps.SidecarSet)
	return selectorWarnings(ss)
}

// StatusStrategy implements the sidecarsets/status subresource: only status changes.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the strategy of sidecarsets/status.
func NewStatusStrategy(s Strategy) StatusStrategy { return StatusStrategy{s} }

// GetResetFields says the status subresource never sets spec or metadata.
func (StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(v1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
		),
		fieldpath.APIVersion(v1beta1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "labels"),
			fieldpath.MakePathOrDie("metadata", "annotations"),
		),
	}
}

// PrepareForUpdate restores everything but the status from the stored object.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ss, oldSS := obj.(*apps.SidecarSet), old.(*apps.SidecarSet)
	ss.Spec = oldSS.Spec
	ss.Labels = oldSS.Labels
	ss.Annotations = oldSS.Annotations
}

// ValidateUpdate validates a status update.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSidecarSetStatusUpdate(obj.(*apps.SidecarSet), old.(*apps.SidecarSet))
}

// WarningsOnUpdate returns no warnings.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and selectable fields of a SidecarSet.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ss, ok := obj.(*apps.SidecarSet)
	if !ok {
		return nil, nil, fmt.Errorf("not a SidecarSet: %T", obj)
	}
	fs := generic.ObjectMetaFieldsSet(&ss.ObjectMeta, false)
	fs["spec.namespace"] = ss.Spec.Namespace
	return labels.Set(ss.Labels), fs, nil
}

// Match returns the selection predicate of SidecarSets.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
