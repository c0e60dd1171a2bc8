package storage

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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

// Kind describes the resource the revisions and rollout subresources hang under: sidecarsets or
// namespacedsidecarsets.
type Kind struct {
	// GVK and Resource are the v1alpha1 kind and resource, for admission attributes and defaults.
	GVK      schema.GroupVersionKind
	Resource schema.GroupVersionResource
	// External returns an empty v1alpha1 object of the kind.
	External func() runtime.Object
	// Engine returns the SidecarSet a stored object takes part as (itself for a SidecarSet).
	Engine func(runtime.Object) *apps.SidecarSet
	// Spec and Status return the stored object's spec and status.
	Spec   func(runtime.Object) *apps.SidecarSetSpec
	Status func(runtime.Object) *apps.SidecarSetStatus
}

// SidecarSetKind is the Kind of sidecarsets.
var SidecarSetKind = Kind{
	GVK:      v1alpha1.SchemeGroupVersion.WithKind("SidecarSet"),
	Resource: v1alpha1.SchemeGroupVersion.WithResource("sidecarsets"),
	External: func() runtime.Object { return &v1alpha1.SidecarSet{} },
	Engine:   func(o runtime.Object) *apps.SidecarSet { return o.(*apps.SidecarSet) },
	Spec:     func(o runtime.Object) *apps.SidecarSetSpec { return &o.(*apps.SidecarSet).Spec },
	Status:   func(o runtime.Object) *apps.SidecarSetStatus { return &o.(*apps.SidecarSet).Status },
}

// NamespacedSidecarSetKind is the Kind of namespacedsidecarsets.
var NamespacedSidecarSetKind = Kind{
	GVK:      v1alpha1.SchemeGroupVersion.WithKind("NamespacedSidecarSet"),
	Resource: v1alpha1.SchemeGroupVersion.WithResource("namespacedsidecarsets"),
	External: func() runtime.Object { return &v1alpha1.NamespacedSidecarSet{} },
	Engine:   func(o runtime.Object) *apps.SidecarSet { return o.(*apps.NamespacedSidecarSet).AsSidecarSet() },
	Spec:     func(o runtime.Object) *apps.SidecarSetSpec { return &o.(*apps.NamespacedSidecarSet).Spec },
	Status:   func(o runtime.Object) *apps.SidecarSetStatus { return &o.(*apps.NamespacedSidecarSet).Status },
}

// RevisionsREST serves GET sidecarsets/<name>/revisions: the SidecarSet's revisions, newest first.
type RevisionsREST struct {
	sidecarSets *genericregistry.Store
	revisions   *genericregistry.Store
	kind        Kind
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
	obj, err := r.sidecarSets.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return ListRevisions(ctx, r.revisions, r.kind.Engine(obj).Name)
}

// ListRevisions lists the revisions of a SidecarSet from the revision store, newest first.
func ListRevisions(ctx context.Context, revisions *genericregistry.Store, sidecarSet string) (*apps.SidecarSetRevisionList, error) {
	obj, err := revisions.List(genericapirequest.WithNamespace(ctx, ""), &metainternalversion.ListOptions{
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
	kind   Kind
	// intake opens once the spec an action writes is admitted.
	intake intakeOpener
	// turns has the actions take turns with the other writes of the namespace; nil for none.
	turns *namespaceTurns
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
	return r.view(ctx, obj)
}

// view returns the rollout view of a stored object, named as the object.
func (r *RolloutREST) view(ctx context.Context, obj runtime.Object) (*apps.SidecarSetRollout, error) {
	view, err := r.engineView(ctx, r.kind.Engine(obj))
	if err != nil {
		return nil, err
	}
	m, _ := meta.Accessor(obj)
	view.Name, view.Namespace = m.GetName(), m.GetNamespace()
	return view, nil
}

func (r *RolloutREST) engineView(ctx context.Context, ss *apps.SidecarSet) (*apps.SidecarSetRollout, error) {
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
		current, err := r.sidecarSets.Get(ctx, name, &metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if revision, err = r.revisionOf(ctx, r.kind.Engine(current).Name, req.Spec.RevisionName); err != nil {
			return nil, err
		}
	}
	apply := func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
		obj := old.DeepCopyObject()
		applyAction(r.kind.Spec(obj), req.Spec.Action, revision)
		return obj, nil
	}
	updateOpts := &metav1.UpdateOptions{DryRun: opts.DryRun, FieldManager: opts.FieldManager}
	done, err := r.turns.take(ctx, updateOpts.DryRun)
	if err != nil {
		return nil, err
	}
	defer done()
	mutate, validate := r.admitAsUpdate(ctx, name, updateOpts)
	updated, _, err := r.sidecarSets.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, apply, mutate),
		rest.ValidateAllObjectFunc, r.intake.afterUpdate(validate, updateOpts.DryRun), false, updateOpts)
	if err != nil {
		return nil, err
	}
	return r.view(ctx, updated)
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
		return admission.NewAttributesRecord(obj, old, r.kind.GVK, genericapirequest.NamespaceValue(ctx), name,
			r.kind.Resource, "", admission.Update, opts, len(opts.DryRun) > 0, user)
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
	proposed := obj.DeepCopyObject()
	*r.kind.Spec(proposed) = *spec.DeepCopy()
	r.kind.Status(proposed).LatestRevision = "" // the proposed spec has no revision yet
	if err := r.defaulted(proposed); err != nil {
		return nil, err
	}
	r.sidecarSets.UpdateStrategy.PrepareForUpdate(ctx, proposed, obj)
	if errs := r.sidecarSets.UpdateStrategy.ValidateUpdate(ctx, proposed, obj); len(errs) > 0 {
		return nil, apierrors.NewInvalid(apps.Kind(r.kind.GVK.Kind), name, errs)
	}
	if r.viewer == nil {
		return r.view(ctx, proposed)
	}
	view, err := r.viewer.Preview(ctx, r.kind.Engine(proposed))
	if err != nil {
		return nil, err
	}
	view.Name, view.Namespace = name, genericapirequest.NamespaceValue(ctx)
	return view, nil
}

// defaulted applies the v1alpha1 defaults to an internal object, as decoding a PUT does.
func (r *RolloutREST) defaulted(obj runtime.Object) error {
	if r.scheme == nil {
		return nil
	}
	external := r.kind.External()
	if err := r.scheme.Convert(obj, external, nil); err != nil {
		return err
	}
	r.scheme.Default(external)
	return r.scheme.Convert(external, obj, nil)
}

// revisionOf returns the named revision if it belongs to the SidecarSet.
func (r *RolloutREST) revisionOf(ctx context.Context, sidecarSet, revisionName string) (*apps.SidecarSetRevision, error) {
	obj, err := r.revisions.Get(genericapirequest.WithNamespace(ctx, ""), revisionName, &metav1.GetOptions{})
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
func applyAction(spec *apps.SidecarSetSpec, action apps.RolloutAction, revision *apps.SidecarSetRevision) {
	switch action {
	case apps.RolloutActionPause:
		spec.UpdateStrategy.Paused = true
	case apps.RolloutActionResume:
		spec.UpdateStrategy.Paused = false
	case apps.RolloutActionRollback:
		rs := revision.Spec.DeepCopy()
		spec.InitContainers = rs.InitContainers
		spec.Containers = rs.Containers
		spec.Volumes = rs.Volumes
		spec.ImagePullSecrets = rs.ImagePullSecrets
		spec.PatchPodMetadata = rs.PatchPodMetadata
	}
}
