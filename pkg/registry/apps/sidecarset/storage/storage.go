// Package storage wires the sidecarsets and namespacedsidecarsets resources and their
// subresources (status, revisions, rollout) to etcd through the generic registry.
package storage

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset"
)

// SidecarSetStorage holds the REST storage of sidecarsets and its subresources.
type SidecarSetStorage struct {
	SidecarSet *REST
	Status     *StatusREST
	Revisions  *RevisionsREST
	Rollout    *RolloutREST
}

// NewStorage builds the storage of sidecarsets. revisions is the store of SidecarSetRevisions;
// viewer computes the rollout view (nil serves a view built from the SidecarSet alone); admit is
// the server's admission chain, which admits the specs /rollout actions write as updates; intake
// is opened for every namespace before a write is stored (nil: none).
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, revisions *genericregistry.Store, viewer RolloutViewer, admit admission.Interface, intake Intake) (SidecarSetStorage, error) {
	strategy := sidecarset.NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &apps.SidecarSet{} },
		NewListFunc:               func() runtime.Object { return &apps.SidecarSetList{} },
		PredicateFunc:             sidecarset.Match,
		DefaultQualifiedResource:  apps.Resource("sidecarsets"),
		SingularQualifiedResource: apps.Resource("sidecarset"),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		ResetFieldsStrategy:       strategy,
		TableConvertor:            sidecarset.TableConvertor{},
	}
	parts := subresourceParts{revisions: revisions, viewer: viewer, admit: admit, scheme: scheme, kind: SidecarSetKind, intake: intakeOpener{intake}}
	return complete(store, sidecarset.GetAttrs, sidecarset.NewStatusStrategy(strategy), optsGetter, parts)
}

// subresourceParts are what the revisions and rollout subresources need besides the main store.
type subresourceParts struct {
	revisions *genericregistry.Store
	viewer    RolloutViewer
	admit     admission.Interface
	scheme    *runtime.Scheme
	kind      Kind
	// guard settles the creates of the main resource under the namespace cap; nil for none.
	guard *capGuard
	// intake opens before the writes that change what an object injects are stored.
	intake intakeOpener
	// turns has the writes of each namespace take turns; nil for none.
	turns *namespaceTurns
}

// statusStrategy is the update strategy of a status subresource.
type statusStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// complete finishes the main store and builds the status, revisions and rollout subresources on it.
func complete(store *genericregistry.Store, attrs storage.AttrFunc, status statusStrategy, optsGetter generic.RESTOptionsGetter, p subresourceParts) (SidecarSetStorage, error) {
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: attrs}); err != nil {
		return SidecarSetStorage{}, err
	}
	statusStore := *store
	statusStore.UpdateStrategy = status
	statusStore.ResetFieldsStrategy = status
	return SidecarSetStorage{
		SidecarSet: &REST{Store: store, guard: p.guard, intake: p.intake, turns: p.turns},
		Status:     &StatusREST{store: &statusStore},
		Revisions:  &RevisionsREST{sidecarSets: store, revisions: p.revisions, kind: p.kind},
		Rollout: &RolloutREST{sidecarSets: store, revisions: p.revisions, viewer: p.viewer, admit: p.admit, scheme: p.scheme, kind: p.kind,
			intake: p.intake, turns: p.turns},
	}, nil
}

// REST is the storage of sidecarsets, and of namespacedsidecarsets with their namespace cap and
// their writes taking turns per namespace.
type REST struct {
	*genericregistry.Store
	guard  *capGuard
	intake intakeOpener
	turns  *namespaceTurns
}

// Create stores a new object once the intake is open (see Intake); a NamespacedSidecarSet near its
// namespace's cap is settled once written (see NamespaceCap).
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	var dryRun []string
	if options != nil {
		dryRun = options.DryRun
	}
	createValidation = r.intake.afterCreate(createValidation, dryRun)
	done, err := r.turns.take(ctx, dryRun)
	if err != nil {
		return nil, err
	}
	defer done()
	if r.guard == nil {
		return r.Store.Create(ctx, obj, createValidation, options)
	}
	return r.guard.create(ctx, r.Store, obj, createValidation, options)
}

// Update changes an object once the intake is open; one it creates (server-side apply) is settled
// as a create.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	var dryRun []string
	if options != nil {
		dryRun = options.DryRun
	}
	createValidation, updateValidation = r.intake.afterCreate(createValidation, dryRun), r.intake.afterUpdate(updateValidation, dryRun)
	done, err := r.turns.take(ctx, dryRun)
	if err != nil {
		return nil, false, err
	}
	defer done()
	out, created, err := r.Store.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
	if err != nil || !created || r.guard == nil {
		return out, created, err
	}
	out, err = r.guard.createdByUpdate(ctx, r.Store, out, options)
	return out, err == nil, err
}

// Delete deletes an object once the intake is open.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	var dryRun []string
	if options != nil {
		dryRun = options.DryRun
	}
	return r.Store.Delete(ctx, name, r.intake.afterDelete(deleteValidation, dryRun), options)
}

// DeleteCollection deletes the objects listed, each once the intake is open.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	var dryRun []string
	if options != nil {
		dryRun = options.DryRun
	}
	return r.Store.DeleteCollection(ctx, r.intake.afterDelete(deleteValidation, dryRun), options, listOptions)
}

// StatusREST is the storage of sidecarsets/status.
type StatusREST struct {
	store *genericregistry.Store
}

var (
	_ rest.StandardStorage      = &REST{}
	_ rest.ResetFieldsStrategy  = &REST{}
	_ rest.Patcher              = &StatusREST{}
	_ rest.ResetFieldsStrategy  = &StatusREST{}
	_ rest.StorageWithReadiness = &StatusREST{}
)

// New returns an empty object of the resource.
func (r *StatusREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main store owns the storage.
func (r *StatusREST) Destroy() {}

// Get returns the SidecarSet.
func (r *StatusREST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, opts)
}

// Update changes the status of a SidecarSet; it never creates one.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, opts *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, opts)
}

// GetResetFields returns the fields the status subresource resets.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the SidecarSet.
func (r *StatusREST) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, obj, opts)
}

// ReadinessCheck reports whether the storage is ready.
func (r *StatusREST) ReadinessCheck() error { return r.store.ReadinessCheck() }
