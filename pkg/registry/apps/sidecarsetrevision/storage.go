package sidecarsetrevision

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
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
	// sidecarSets reads the SidecarSet an imported revision belongs to; nil: none is ever found.
	sidecarSets rest.Getter
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

// NewREST exposes store to clients; sidecarSets (the SidecarSets' storage) is where an imported
// revision's SidecarSet is looked up.
func NewREST(store *genericregistry.Store, sidecarSets rest.Getter) *REST {
	return &REST{store: store, sidecarSets: sidecarSets}
}

// New returns an empty revision.
func (r *REST) New() runtime.Object { return r.store.New() }

// Destroy releases the store.
func (r *REST) Destroy() { r.store.Destroy() }

// NamespaceScoped is false.
func (r *REST) NamespaceScoped() bool { return false }

// GetSingularName returns "sidecarsetrevision".
func (r *REST) GetSingularName() string { return r.store.GetSingularName() }

// Create records a revision a client imports, as safely as a SidecarSet write: beyond what the
// strategy checks for every revision (its SidecarSet's name, and the label naming it),
//   - validation.ValidateRevisionCreate: a number of 1 or more, a cluster SidecarSet's name (never a
//     NamespacedSidecarSet's <ns>.<name>), a revision name and labels that are that SidecarSet's,
//     and a snapshot one a SidecarSet could hold;
//   - ValidateHashes: the hash annotations are the server's, computed from the snapshot (stamped
//     when absent, refused when given and different);
//   - ValidateHistory: while its SidecarSet exists, the revision changes nothing it injects today
//     (it is not newer than its latest revision, nor than the newest of its custom version); its
//     number is not one of another revision of the same SidecarSet;
//   - then the admission chain (createValidation): the SidecarSetCrossValidation plugin checks
//     the snapshot as a write of its SidecarSet would be (patchPodMetadata whitelist, Pod Security,
//     conflicts with the other SidecarSets).
//
// A revision without a controller is adopted by the SidecarSet it is labelled with, which reuses it
// when its spec equals the snapshot rather than record another.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	if rev, ok := obj.(*apps.SidecarSetRevision); ok {
		stampMissingHashes(rev)
	}
	return r.store.Create(ctx, obj, func(ctx context.Context, obj runtime.Object) error {
		rev := obj.(*apps.SidecarSetRevision)
		errs := validation.ValidateRevisionCreate(rev)
		errs = append(errs, ValidateHashes(rev)...)
		if len(errs) == 0 {
			historyErrs, err := r.validateHistory(ctx, rev)
			if err != nil {
				return err
			}
			errs = historyErrs
		}
		if len(errs) > 0 {
			return apierrors.NewInvalid(apps.Kind("SidecarSetRevision"), rev.Name, errs)
		}
		if createValidation != nil {
			return createValidation(ctx, obj)
		}
		return nil
	}, options)
}

// ValidateHashes makes the revision's kruise.io/sidecarset-hash and
// kruise.io/sidecarset-hash-without-image the server's: computed from its snapshot as the
// SidecarSet strategy computes a SidecarSet's (pods injected from the revision carry them, and the
// controller counts a pod updated when its hash equals the SidecarSet's). A missing annotation is
// stamped (REST.Create); a given one that differs is refused, naming both values: a migration tool is told what
// differs rather than have pods look up to date while they run something else.
func ValidateHashes(rev *apps.SidecarSetRevision) field.ErrorList {
	h, err := stored.Hashes(validation.InjectedSpec(rev))
	if err != nil {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "containers"), "", fmt.Sprintf("cannot be hashed: %v", err))}
	}
	var errs field.ErrorList
	for _, a := range []struct{ key, want string }{
		{v1alpha1.SidecarSetHashAnnotation, h.WithImage},
		{v1alpha1.SidecarSetHashWithoutImageAnnotation, h.WithoutImage},
	} {
		if got, ok := rev.Annotations[a.key]; ok && got != a.want {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(a.key), got, fmt.Sprintf(
				"the server computes %s from the revision's containers (and native sidecar init containers); leave it out or give that value", a.want)))
		}
	}
	return errs
}

// stampMissingHashes sets the hash annotations the revision lacks to the server's; a given value
// is kept, for ValidateHashes to judge. A snapshot that cannot be hashed keeps none.
func stampMissingHashes(rev *apps.SidecarSetRevision) {
	h, err := stored.Hashes(validation.InjectedSpec(rev))
	if err != nil {
		return
	}
	if rev.Annotations == nil {
		rev.Annotations = map[string]string{}
	}
	for k, v := range map[string]string{v1alpha1.SidecarSetHashAnnotation: h.WithImage, v1alpha1.SidecarSetHashWithoutImageAnnotation: h.WithoutImage} {
		if _, ok := rev.Annotations[k]; !ok {
			rev.Annotations[k] = v
		}
	}
}

// validateHistory checks the revision against the stored history of its SidecarSet and, when the
// SidecarSet exists, against what it injects. A revision of the same name already stored is left
// to the store (AlreadyExists: a migration run twice says so).
func (r *REST) validateHistory(ctx context.Context, rev *apps.SidecarSetRevision) (field.ErrorList, error) {
	if _, err := r.store.Get(ctx, rev.Name, &metav1.GetOptions{}); err == nil {
		return nil, nil
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	obj, err := r.store.List(ctx, &metainternalversion.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.SidecarSetNameLabel: rev.SidecarSetName})})
	if err != nil {
		return nil, err
	}
	var history []*apps.SidecarSetRevision
	for i := range obj.(*apps.SidecarSetRevisionList).Items {
		if o := &obj.(*apps.SidecarSetRevisionList).Items[i]; o.SidecarSetName == rev.SidecarSetName {
			history = append(history, o)
		}
	}
	exists := false
	if r.sidecarSets != nil {
		if _, err := r.sidecarSets.Get(ctx, rev.SidecarSetName, &metav1.GetOptions{}); err == nil {
			exists = true
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return ValidateHistory(rev, history, exists), nil
}

// ValidateHistory checks an imported revision against the stored revisions of its SidecarSet
// (history) and whether that SidecarSet exists. Its number must not be another revision's (numbers
// order a history; two equal ones make "the newest" ambiguous). While the SidecarSet exists, the
// import must change nothing it injects: not newer than its newest recorded revision (the
// controller and rollouts take the newest for the latest), nor, with an
// apps.kruise.io/sidecarset-custom-version label, newer than the newest revision of that custom
// version (injectionStrategy.revision.customVersion injects the newest one: it would switch
// without a change to the SidecarSet). History is imported before its SidecarSet (kubectl
// sidecarset migrate's order), or below it.
func ValidateHistory(rev *apps.SidecarSetRevision, history []*apps.SidecarSetRevision, sidecarSetExists bool) field.ErrorList {
	number := field.NewPath("revision")
	var newest, newestOfVersion *apps.SidecarSetRevision
	version, hasVersion := rev.Labels[v1alpha1.SidecarSetCustomVersionLabel]
	for _, o := range history {
		if o.Name == rev.Name {
			continue
		}
		if o.Revision == rev.Revision {
			return field.ErrorList{field.Invalid(number, rev.Revision, fmt.Sprintf(
				"is the number of revision %s of SidecarSet %s: each revision of a SidecarSet has its own number", o.Name, rev.SidecarSetName))}
		}
		if newest == nil || o.Revision > newest.Revision {
			newest = o
		}
		if v, ok := o.Labels[v1alpha1.SidecarSetCustomVersionLabel]; hasVersion && ok && v == version &&
			(newestOfVersion == nil || o.Revision > newestOfVersion.Revision) {
			newestOfVersion = o
		}
	}
	if !sidecarSetExists {
		return nil
	}
	if newest == nil {
		return field.ErrorList{field.Forbidden(number, fmt.Sprintf(
			"SidecarSet %s exists and has no revision yet: import its history before creating it", rev.SidecarSetName))}
	}
	if rev.Revision > newest.Revision {
		return field.ErrorList{field.Forbidden(number, fmt.Sprintf(
			"%d is newer than %d (%s), the newest revision of the existing SidecarSet %s: an import would change what it injects; import history before the SidecarSet, or numbered below %d",
			rev.Revision, newest.Revision, newest.Name, rev.SidecarSetName, newest.Revision))}
	}
	if newestOfVersion != nil && rev.Revision > newestOfVersion.Revision {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "labels").Key(v1alpha1.SidecarSetCustomVersionLabel), fmt.Sprintf(
			"revision %d would be newer than %d (%s), the newest revision of custom version %s of the existing SidecarSet %s: injectionStrategy.revision.customVersion %s would inject it instead",
			rev.Revision, newestOfVersion.Revision, newestOfVersion.Name, version, rev.SidecarSetName, version))}
	}
	return nil
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
