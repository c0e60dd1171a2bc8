package apiserver

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// RevisionWriter writes SidecarSetRevisions straight to their store, for the in-process
// controller: clients may only read revisions, and create one to import a history.
type RevisionWriter struct {
	Store *genericregistry.Store
}

func toInternal(r *v1alpha1.SidecarSetRevision) (*apps.SidecarSetRevision, error) {
	out := &apps.SidecarSetRevision{}
	err := v1alpha1.Convert_v1alpha1_SidecarSetRevision_To_apps_SidecarSetRevision(r.DeepCopy(), out, nil)
	return out, err
}

// clusterScoped marks ctx as a request for a cluster-scoped object, as the API handlers do.
func clusterScoped(ctx context.Context) context.Context {
	return genericapirequest.WithNamespace(ctx, metav1.NamespaceNone)
}

// Get reads a revision from storage, bypassing any cache.
func (w RevisionWriter) Get(ctx context.Context, name string) (*v1alpha1.SidecarSetRevision, error) {
	obj, err := w.Store.Get(clusterScoped(ctx), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := &v1alpha1.SidecarSetRevision{}
	err = v1alpha1.Convert_apps_SidecarSetRevision_To_v1alpha1_SidecarSetRevision(obj.(*apps.SidecarSetRevision), out, nil)
	return out, err
}

// Create records a revision.
func (w RevisionWriter) Create(ctx context.Context, r *v1alpha1.SidecarSetRevision) error {
	in, err := toInternal(r)
	if err != nil {
		return err
	}
	_, err = w.Store.Create(clusterScoped(ctx), in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	return err
}

// Update renumbers or relabels a revision; its snapshot cannot change.
func (w RevisionWriter) Update(ctx context.Context, r *v1alpha1.SidecarSetRevision) error {
	in, err := toInternal(r)
	if err != nil {
		return err
	}
	_, _, err = w.Store.Update(clusterScoped(ctx), in.Name, rest.DefaultUpdatedObjectInfo(in), rest.ValidateAllObjectFunc,
		rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}

// Delete prunes a revision.
func (w RevisionWriter) Delete(ctx context.Context, name string) error {
	_, _, err := w.Store.Delete(clusterScoped(ctx), name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	return err
}
