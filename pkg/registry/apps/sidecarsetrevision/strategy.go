// Package sidecarsetrevision holds the registry of SidecarSetRevisions: immutable snapshots of a
// SidecarSet's injection-relevant spec. Users read them (get, list, watch); a privileged client may
// create one to import a history (REST.Create: kubectl sidecarset migrate, granted by the role
// sidecarsets-admin only); the server's controller records, renumbers, adopts and prunes them
// through the in-process Store. No client updates or deletes one.
package sidecarsetrevision

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Strategy makes revisions immutable once recorded.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the SidecarSetRevision strategy.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{typer, names.SimpleNameGenerator}
}

// NamespaceScoped is false: revisions are cluster-scoped like their SidecarSets.
func (Strategy) NamespaceScoped() bool { return false }

// PrepareForCreate does nothing.
func (Strategy) PrepareForCreate(context.Context, runtime.Object) {}

// PrepareForUpdate does nothing.
func (Strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

// Validate requires the owning SidecarSet's name and label.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	r := obj.(*apps.SidecarSetRevision)
	var errs field.ErrorList
	if r.SidecarSetName == "" {
		errs = append(errs, field.Required(field.NewPath("sidecarSetName"), ""))
	}
	if r.Labels[v1alpha1.SidecarSetNameLabel] != r.SidecarSetName {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(v1alpha1.SidecarSetNameLabel),
			r.Labels[v1alpha1.SidecarSetNameLabel], "must equal sidecarSetName"))
	}
	return errs
}

// ValidateUpdate allows metadata changes (labels, revision number) but never a different snapshot.
func (s Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	r, oldR := obj.(*apps.SidecarSetRevision), old.(*apps.SidecarSetRevision)
	errs := s.Validate(ctx, obj)
	if !apiequality.Semantic.DeepEqual(r.Spec, oldR.Spec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "a revision is immutable"))
	}
	if r.SidecarSetName != oldR.SidecarSetName {
		errs = append(errs, field.Forbidden(field.NewPath("sidecarSetName"), "a revision is immutable"))
	}
	return errs
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// Canonicalize does nothing.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false.
func (Strategy) AllowCreateOnUpdate() bool { return false }

// AllowUnconditionalUpdate is false: revision updates are optimistic.
func (Strategy) AllowUnconditionalUpdate() bool { return false }

// GetAttrs returns the labels and selectable fields of a revision.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	r, ok := obj.(*apps.SidecarSetRevision)
	if !ok {
		return nil, nil, fmt.Errorf("not a SidecarSetRevision: %T", obj)
	}
	fs := generic.ObjectMetaFieldsSet(&r.ObjectMeta, false)
	fs["sidecarSetName"] = r.SidecarSetName
	return labels.Set(r.Labels), fs, nil
}

// Match returns the selection predicate of revisions.
func Match(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}

// TableConvertor prints NAME SIDECARSET REVISION CUSTOM-VERSION AGE.
type TableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the revision."},
	{Name: "SidecarSet", Type: "string", Description: "The SidecarSet it belongs to."},
	{Name: "Revision", Type: "integer", Description: "Sequence number within the SidecarSet; higher is newer."},
	{Name: "Custom-Version", Type: "string", Description: "The apps.kruise.io/sidecarset-custom-version label."},
	{Name: "Age", Type: "date", Description: "Time since the revision was recorded."},
	{Name: "Hash", Type: "string", Priority: 1, Description: "The kruise.io/sidecarset-hash of the revision."},
}

// ConvertToTable converts revisions to a table.
func (TableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if o, ok := opts.(*metav1.TableOptions); !ok || !o.NoHeaders {
		table.ColumnDefinitions = columns
	}
	var err error
	table.Rows, err = metatable.MetaToTableRow(obj, func(obj runtime.Object, m metav1.Object, name, age string) ([]interface{}, error) {
		r := obj.(*apps.SidecarSetRevision)
		return []interface{}{name, r.SidecarSetName, r.Revision, r.Labels[v1alpha1.SidecarSetCustomVersionLabel], age,
			r.Annotations[v1alpha1.SidecarSetHashAnnotation]}, nil
	})
	if err != nil {
		return nil, err
	}
	if l, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = l.GetResourceVersion()
		table.Continue = l.GetContinue()
	}
	return table, nil
}
