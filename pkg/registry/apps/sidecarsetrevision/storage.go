package sidecarsetrevision

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
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

// ReadOnlyREST serves revisions to clients: get, list and watch only.
type ReadOnlyREST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter               = &ReadOnlyREST{}
	_ rest.Lister               = &ReadOnlyREST{}
	_ rest.Watcher              = &ReadOnlyREST{}
	_ rest.Scoper               = &ReadOnlyREST{}
	_ rest.SingularNameProvider = &ReadOnlyREST{}
	_ rest.Storage              = &ReadOnlyREST{}
)

// NewReadOnlyREST exposes store read-only.
func NewReadOnlyREST(store *genericregistry.Store) *ReadOnlyREST { return &ReadOnlyREST{store: store} }

// New returns an empty revision.
func (r *ReadOnlyREST) New() runtime.Object { return r.store.New() }

// Destroy releases the store.
func (r *ReadOnlyREST) Destroy() { r.store.Destroy() }

// NamespaceScoped is false.
func (r *ReadOnlyREST) NamespaceScoped() bool { return false }

// GetSingularName returns "sidecarsetrevision".
func (r *ReadOnlyREST) GetSingularName() string { return r.store.GetSingularName() }

// Get returns one revision.
func (r *ReadOnlyREST) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, opts)
}

// NewList returns an empty revision list.
func (r *ReadOnlyREST) NewList() runtime.Object { return r.store.NewList() }

// List lists revisions.
func (r *ReadOnlyREST) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.store.List(ctx, opts)
}

// Watch watches revisions.
func (r *ReadOnlyREST) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.store.Watch(ctx, opts)
}

// ConvertToTable prints revisions.
func (r *ReadOnlyREST) ConvertToTable(ctx context.Context, obj runtime.Object, opts runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, obj, opts)
}
