package storage

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
)

// RevisionsREST serves GET sidecarsets/<name>/revisions: the SidecarSet's revisions, newest first.
type RevisionsREST struct {
	sidecarSets *genericregistry.Store
	revisions   *genericregistry.Store
}

var (
	_ rest.Getter                   = &RevisionsREST{}
	_ rest.GroupVersionKindProvider = &RevisionsREST{}
)

// New returns an empty revision list, the kind this subresource serves.
func (r *RevisionsREST) New() runtime.Object { return &apps.SidecarSetRevisionList{} }

// Destroy does nothing: the stores are owned elsewhere.
func (r *RevisionsREST) Destroy() {}

// GroupVersionKind returns the v1alpha1 SidecarSetRevisionList at every version of sidecarsets:
// SidecarSetRevision has no other version.
func (r *RevisionsREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return v1alpha1.SchemeGroupVersion.WithKind("SidecarSetRevisionList")
}

// Get returns the revisions of the named SidecarSet, newest first.
func (r *RevisionsREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if _, err := r.sidecarSets.Get(ctx, name, &metav1.GetOptions{}); err != nil {
		return nil, err
	}
	return ListRevisions(ctx, r.revisions, name)
}

// ListRevisions lists the revisions of a SidecarSet from the revision store, newest first.
func ListRevisions(ctx context.Context, revisions *genericregistry.Store, sidecarSet string) (*apps.SidecarSetRevisionList, error) {
	obj, err := revisions.List(ctx, &metainternalversion.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.SidecarSetNameLabel: sidecarSet}),
	})
	if err != nil {
		return nil, err
	}
	list := obj.(*apps.SidecarSetRevisionList)
	sort.SliceStable(list.Items, func(i, j int) bool { return list.Items[i].Revision > list.Items[j].Revision })
	return list, nil
}

// RolloutViewer computes the rollout view of a SidecarSet from the pods it manages.
type RolloutViewer interface {
	// View returns the rollout view of ss: the plan of its next round.
	View(ctx context.Context, ss *apps.SidecarSet) (*apps.SidecarSetRollout, error)
	// Preview returns the view of a rollout of ss, a SidecarSet with a proposed spec, to its end:
	// the next round's plan with the batch that would upgrade each pod.
	Preview(ctx context.Context, ss *apps.SidecarSet) (*apps.SidecarSetRollout, error)
}

// RolloutREST serves sidecarsets/<name>/rollout: GET returns the rollout view, POST performs an
// action (Pause, Resume, Rollback) through the SidecarSet's update strategy, so generation,
// validation, dry-run and managed fields behave as for any update. The Preview action writes
// nothing: it answers with the plan of a rollout of a proposed spec.
type RolloutREST struct {
	sidecarSets *genericregistry.Store
	revisions   *genericregistry.Store
	viewer      RolloutViewer
	// admit is the server's admission chain: the spec an action writes is admitted as an update
	// of the SidecarSet (nil admits it without).
	admit  admission.Interface
	scheme *runtime.Scheme
}

var (
	_ rest.Getter                   = &RolloutREST{}
	_ rest.NamedCreater             = &RolloutREST{}
	_ rest.GroupVersionKindProvider = &RolloutREST{}
)

// New returns an empty SidecarSetRollout.
func (r *RolloutREST) New() runtime.Object { return &apps.SidecarSetRollout{} }

// Destroy does nothing: the stores are owned elsewhere.
func (r *RolloutREST) Destroy() {}

// GroupVersionKind returns the SidecarSetRollout of the version the request is for: the rollout
// view has the same shape at every version.
func (r *RolloutREST) GroupVersionKind(containingGV schema.GroupVersion) schema.GroupVersionKind {
	return containingGV.WithKind("SidecarSetRollout")
}

// Get returns the rollout view of the named SidecarSet.
func (r *RolloutREST) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.sidecarSets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return r.view(ctx, obj.(*apps.SidecarSet))
}

func (r *RolloutREST) view(ctx context.Context, ss *apps.SidecarSet) (*apps.SidecarSetRollout, error) {
	if r.viewer != nil {
		return r.viewer.View(ctx, ss)
	}
	return &apps.SidecarSetRollout{
		ObjectMeta: metav1.ObjectMeta{Name: ss.Name, ResourceVersion: ss.ResourceVersion, Generation: ss.Generation},
		Status: apps.SidecarSetRolloutStatus{
			ObservedGeneration: ss.Status.ObservedGeneration,
			LatestRevision:     ss.Status.LatestRevision,
			Paused:             ss.Spec.UpdateStrategy.Paused,
		},
	}, nil
}

// Create performs the rollout action in obj on the named SidecarSet and returns the new view.
func (r *RolloutREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	req := obj.(*apps.SidecarSetRollout)
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("metadata.name %q does not match the SidecarSet %q", req.Name, name))
	}
	if errs := validation.ValidateRolloutAction(&req.Spec); len(errs) > 0 {
		return nil, apierrors.NewInvalid(apps.Kind("SidecarSetRollout"), name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, req.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	if req.Spec.Action == apps.RolloutActionPreview {
		return r.preview(ctx, name, req.Spec.Proposed)
	}
	var revision *apps.SidecarSetRevision
	if req.Spec.Action == apps.RolloutActionRollback {
		var err error
		if revision, err = r.revisionOf(ctx, name, req.Spec.RevisionName); err != nil {
			return nil, err
		}
	}
	apply := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		ss := old.(*apps.SidecarSet).DeepCopy()
		applyAction(ss, req.Spec.Action, revision)
		return ss, nil
	}
	updateOpts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager}
	mutate, validate := r.admitAsUpdate(ctx, name, updateOpts)
	updated, _, err := r.sidecarSets.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, apply, mutate),
		rest.ValidateAllObjectFunc, validate, false, updateOpts)
	if err != nil {
		return nil, err
	}
	return r.view(ctx, updated.(*apps.SidecarSet))
}

// admitAsUpdate returns the steps that put the spec an action writes through the whole admission
// chain (this server's plugins, the cluster's admission policies and webhooks) as an update of the
// SidecarSet by the requesting user, exactly as a PUT would: whatever the subresource, no spec
// reaches storage past the checks an update gets.
func (r *RolloutREST) admitAsUpdate(ctx context.Context, name string, opts *metav1.UpdateOptions) (rest.TransformFunc, rest.ValidateObjectUpdateFunc) {
	if r.admit == nil {
		return func(_ context.Context, obj, _ runtime.Object) (runtime.Object, error) { return obj, nil }, rest.ValidateAllObjectUpdateFunc
	}
	user, _ := genericapirequest.UserFrom(ctx)
	o := admission.NewObjectInterfacesFromScheme(r.scheme)
	attrs := func(obj, old runtime.Object) admission.Attributes {
		return admission.NewAttributesRecord(obj, old, v1alpha1.SchemeGroupVersion.WithKind("SidecarSet"), "", name,
			v1alpha1.SchemeGroupVersion.WithResource("sidecarsets"), "", admission.Update, opts, len(opts.DryRun) > 0, user)
	}
	mutate := func(ctx context.Context, obj, old runtime.Object) (runtime.Object, error) {
		if m, ok := r.admit.(admission.MutationInterface); ok && m.Handles(admission.Update) {
			if err := m.Admit(ctx, attrs(obj, old), o); err != nil {
				return nil, err
			}
		}
		return obj, nil
	}
	validate := func(ctx context.Context, obj, old runtime.Object) error {
		if v, ok := r.admit.(admission.ValidationInterface); ok && v.Handles(admission.Update) {
			return v.Validate(ctx, attrs(obj, old), o)
		}
		return nil
	}
	return mutate, validate
}

// preview answers the Preview action: the SidecarSet with the proposed spec, defaulted, stamped
// and validated as an update would be, planned over the pods it selects. Nothing is written.
func (r *RolloutREST) preview(ctx context.Context, name string, spec *apps.SidecarSetSpec) (runtime.Object, error) {
	obj, err := r.sidecarSets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	current := obj.(*apps.SidecarSet)
	proposed := current.DeepCopy()
	proposed.Spec = *spec.DeepCopy()
	proposed.Status.LatestRevision = "" // the proposed spec has no revision yet
	if err := r.defaulted(proposed); err != nil {
		return nil, err
	}
	r.sidecarSets.UpdateStrategy.PrepareForUpdate(ctx, proposed, current)
	if errs := r.sidecarSets.UpdateStrategy.ValidateUpdate(ctx, proposed, current); len(errs) > 0 {
		return nil, apierrors.NewInvalid(apps.Kind("SidecarSet"), name, errs)
	}
	if r.viewer == nil {
		return r.view(ctx, proposed)
	}
	return r.viewer.Preview(ctx, proposed)
}

// defaulted applies the v1alpha1 defaults to an internal SidecarSet, as decoding a PUT does.
func (r *RolloutREST) defaulted(ss *apps.SidecarSet) error {
	if r.scheme == nil {
		return nil
	}
	external := &v1alpha1.SidecarSet{}
	if err := r.scheme.Convert(ss, external, nil); err != nil {
		return err
	}
	r.scheme.Default(external)
	return r.scheme.Convert(external, ss, nil)
}

// revisionOf returns the named revision if it belongs to the SidecarSet.
func (r *RolloutREST) revisionOf(ctx context.Context, sidecarSet, revisionName string) (*apps.SidecarSetRevision, error) {
	obj, err := r.revisions.Get(ctx, revisionName, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	rev := obj.(*apps.SidecarSetRevision)
	if rev.SidecarSetName != sidecarSet {
		errs := field.ErrorList{field.Invalid(field.NewPath("spec", "revisionName"), revisionName,
			fmt.Sprintf("revision belongs to SidecarSet %q", rev.SidecarSetName))}
		return nil, apierrors.NewInvalid(apps.Kind("SidecarSetRollout"), sidecarSet, errs)
	}
	return rev, nil
}

// applyAction changes the SidecarSet as the action says.
func applyAction(ss *apps.SidecarSet, action apps.RolloutAction, revision *apps.SidecarSetRevision) {
	switch action {
	case apps.RolloutActionPause:
		ss.Spec.UpdateStrategy.Paused = true
	case apps.RolloutActionResume:
		ss.Spec.UpdateStrategy.Paused = false
	case apps.RolloutActionRollback:
		rs := revision.Spec.DeepCopy()
		ss.Spec.InitContainers = rs.InitContainers
		ss.Spec.Containers = rs.Containers
		ss.Spec.Volumes = rs.Volumes
		ss.Spec.ImagePullSecrets = rs.ImagePullSecrets
		ss.Spec.PatchPodMetadata = rs.PatchPodMetadata
	}
}
