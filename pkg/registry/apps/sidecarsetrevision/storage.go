package sidecarsetrevision

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
)

// NewStore returns the full (writable) store of revisions, for in-process writers.
func NewStore(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	strategy := NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &apps.SidecarSetRevision{} },
		NewListFunc:               func() runtime.Object { return &apps.SidecarSetRevisionList{} },
		PredicateFunc:             Match,
		DefaultQualifiedResource:  apps.Resource("sidecarsetrevisions"),
		SingularQualifiedResource: apps.Resource("sidecarsetrevision"),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            TableConvertor{},
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return store, nil
}

// REST serves revisions to clients: get, list, watch, and create to import a history (kubectl
// sidecarset migrate writes OpenKruise's ControllerRevisions as revisions, under their names and
// numbers, before their SidecarSets). Nobody but the controller updates or deletes a revision.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Creater              = &REST{}
	_ rest.Getter               = &REST{}
	_ rest.Lister               = &REST{}
	_ rest.Watcher              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.Storage              = &REST{}
)

// NewREST exposes store to clients.
func NewREST(store *genericregistry.Store) *REST { return &REST{store: store} }

// New returns an empty revision.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy releases the store.
func (r *REST) Destroy() { r.store.Destroy() }

// NamespaceScoped is false.
func (r *REST) NamespaceScoped() bool { return false }

// GetSingularName returns "sidecarsetrevision".
func (r *REST) GetSingularName() string { return r.store.GetSingularName() }

// Create records a revision a client imports: beyond what the strategy checks for every revision
// (its SidecarSet's name, and the label naming it), its number is 1 or more and its snapshot is
// one a SidecarSet could hold. A revision without a controller is adopted by the SidecarSet it is
// labelled with, which reuses it when its spec equals the snapshot rather than record another.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		rev := obj.(*apps.SidecarSetRevision)
		if errs := validation.ValidateRevisionCreate(rev); len(errs) > 0 {
			return apierrors.NewInvalid(apps.Kind("SidecarSetRevision"), rev.Name, errs)
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}, options)
}

// Get returns one revision.
func (r *REST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, opts)
}

// NewList returns an empty revision list.
func (r *REST) NewList() runtime.Object { return r.store.NewList() }

// List lists revisions.
func (r *REST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.store.List(ctx, opts)
}

// Watch watches revisions.
func (r *REST) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.store.Watch(ctx, opts)
}

// ConvertToTable prints revisions.
func (r *REST) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, obj, opts)
}
