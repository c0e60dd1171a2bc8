// Package namespacedsidecarset holds the registry strategies of the namespacedsidecarsets
// resource. A NamespacedSidecarSet behaves as a SidecarSet (the same generation, hash and status
// rules, through the sidecarset strategies) limited to its own namespace.
package namespacedsidecarset

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset"
)

// Strategy implements create, update and delete behaviour for NamespacedSidecarSets.
type Strategy struct {
	sidecarset.Strategy
}

// NewStrategy returns the NamespacedSidecarSet strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{sidecarset.NewStrategy(typer)}
}

// NamespaceScoped is true.
func (Strategy) NamespaceScoped() bool { return true }

// PrepareForCreate clears the status, starts the generation at 1 and stamps the hashes.
func (s Strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	n := obj.(*apps.NamespacedSidecarSet)
	v := n.View()
	s.Strategy.PrepareForCreate(ctx, v)
	n.ObjectMeta, n.Spec, n.Status = v.ObjectMeta, v.Spec, v.Status
}

// PrepareForUpdate keeps the stored status, bumps the generation on a spec change and restamps
// the hashes.
func (s Strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	n := obj.(*apps.NamespacedSidecarSet)
	v := n.View()
	s.Strategy.PrepareForUpdate(ctx, v, old.(*apps.NamespacedSidecarSet).View())
	n.ObjectMeta, n.Spec, n.Status = v.ObjectMeta, v.Spec, v.Status
}

// Validate validates a new NamespacedSidecarSet.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateNamespacedSidecarSet(obj.(*apps.NamespacedSidecarSet))
}

// WarningsOnCreate warns as for a SidecarSet.
func (s Strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	return s.Strategy.WarningsOnCreate(ctx, obj.(*apps.NamespacedSidecarSet).View())
}

// ValidateUpdate validates an update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNamespacedSidecarSetUpdate(obj.(*apps.NamespacedSidecarSet), old.(*apps.NamespacedSidecarSet))
}

// WarningsOnUpdate warns as for a SidecarSet.
func (s Strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return s.Strategy.WarningsOnUpdate(ctx, obj.(*apps.NamespacedSidecarSet).View(), nil)
}

// StatusStrategy implements the namespacedsidecarsets/status subresource: only status changes.
type StatusStrategy struct {
	Strategy
	status sidecarset.StatusStrategy
}

// NewStatusStrategy returns the strategy of namespacedsidecarsets/status.
func NewStatusStrategy(s Strategy) StatusStrategy {
	return StatusStrategy{Strategy: s, status: sidecarset.NewStatusStrategy(s.Strategy)}
}

// GetResetFields says the status subresource never sets spec or metadata.
func (s StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return s.status.GetResetFields()
}

// PrepareForUpdate restores everything but the status from the stored object.
func (s StatusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	n := obj.(*apps.NamespacedSidecarSet)
	v := n.View()
	s.status.PrepareForUpdate(ctx, v, old.(*apps.NamespacedSidecarSet).View())
	n.ObjectMeta, n.Spec = v.ObjectMeta, v.Spec
}

// ValidateUpdate validates a status update.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateNamespacedSidecarSetStatusUpdate(obj.(*apps.NamespacedSidecarSet), old.(*apps.NamespacedSidecarSet))
}

// WarningsOnUpdate returns no warnings.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and selectable fields of a NamespacedSidecarSet.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	n, ok := obj.(*apps.NamespacedSidecarSet)
	if !ok {
		return nil, nil, fmt.Errorf("not a NamespacedSidecarSet: %T", obj)
	}
	return labels.Set(n.Labels), generic.ObjectMetaFieldsSet(&n.ObjectMeta, true), nil
}

// Match returns the selection predicate of NamespacedSidecarSets.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
