// Package storage wires the sidecarsets resource and its subresources (status, revisions, rollout)
// to etcd through the generic registry.
package storage

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
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
// the server's admission chain, which admits the specs /rollout actions write as updates.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, revisions *genericregistry.Store, viewer RolloutViewer, admit admission.Interface) (SidecarSetStorage, error) {
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
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: sidecarset.GetAttrs}); err != nil {
		return SidecarSetStorage{}, err
	}
	store.AfterDelete = deleteHistory(revisions)
	statusStore := *store
	statusStrategy := sidecarset.NewStatusStrategy(strategy)
	statusStore.UpdateStrategy = statusStrategy
	statusStore.ResetFieldsStrategy = statusStrategy

	return SidecarSetStorage{
		SidecarSet: &REST{store},
		Status:     &StatusREST{store: &statusStore},
		Revisions:  &RevisionsREST{sidecarSets: store, revisions: revisions},
		Rollout:    &RolloutREST{sidecarSets: store, revisions: revisions, viewer: viewer, admit: admit, scheme: scheme},
	}, nil
}

// REST is the storage of sidecarsets.
type REST struct {
	*genericregistry.Store
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

// New returns an empty SidecarSet.
func (r *StatusREST) New() runtime.Object { return &apps.SidecarSet{} }

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

// deleteHistory returns the hook that deletes a deleted SidecarSet's revisions with it (those it
// owns, by UID): revisions have no delete verb, so nothing else would, and a new SidecarSet of the
// same name starts a fresh history. The controller also ignores revisions another SidecarSet of
// that name owned, should this hook not finish (a crash between the two deletes).
func deleteHistory(revisions *genericregistry.Store) genericregistry.AfterDeleteFunc {
	return func(obj runtime.Object, options *metav1.DeleteOptions) {
		ss, ok := obj.(*apps.SidecarSet)
		if !ok || (options != nil && len(options.DryRun) > 0) {
			return
		}
		ctx, cancel := context.WithTimeout(genericapirequest.NewContext(), 30*time.Second)
		defer cancel()
		sel := labels.SelectorFromSet(labels.Set{v1alpha1.SidecarSetNameLabel: ss.Name})
		list, err := revisions.List(ctx, &metainternalversion.ListOptions{LabelSelector: sel})
		if err != nil {
			klog.ErrorS(err, "listing the revisions of a deleted SidecarSet", "sidecarset", ss.Name)
			return
		}
		for i := range list.(*apps.SidecarSetRevisionList).Items {
			rev := &list.(*apps.SidecarSetRevisionList).Items[i]
			if owner := metav1.GetControllerOfNoCopy(rev); owner != nil && owner.UID != ss.UID {
				continue
			}
			uid := rev.UID
			_, _, err := revisions.Delete(ctx, rev.Name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				klog.ErrorS(err, "deleting a revision of a deleted SidecarSet", "sidecarset", ss.Name, "revision", rev.Name)
			}
		}
	}
}
