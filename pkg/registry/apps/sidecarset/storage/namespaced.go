package storage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/registry/apps/namespacedsidecarset"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset"
)

// NewNamespacedStorage builds the storage of namespacedsidecarsets and its subresources, which
// behave as those of sidecarsets; the revisions are SidecarSetRevisions named after
// apps.NamespacedName. intake is opened for the object's namespace alone before a write is stored;
// limits are the per-namespace limits held under concurrent writes.
func NewNamespacedStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, revisions *genericregistry.Store, viewer RolloutViewer, admit admission.Interface, intake Intake, limits NamespaceLimits) (SidecarSetStorage, error) {
	strategy := namespacedsidecarset.NewStrategy(scheme)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &apps.NamespacedSidecarSet{} },
		NewListFunc:               func() runtime.Object { return &apps.NamespacedSidecarSetList{} },
		PredicateFunc:             namespacedsidecarset.Match,
		DefaultQualifiedResource:  apps.Resource("namespacedsidecarsets"),
		SingularQualifiedResource: apps.Resource("namespacedsidecarset"),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		ResetFieldsStrategy:       strategy,
		TableConvertor:            sidecarset.TableConvertor{},
	}
	parts := subresourceParts{revisions: revisions, viewer: viewer, admit: admit, scheme: scheme, kind: NamespacedSidecarSetKind,
		guard: newCapGuard(limits.Cap), intake: intakeOpener{intake}, turns: newNamespaceTurns(limits.Bytes)}
	return complete(store, namespacedsidecarset.GetAttrs, namespacedsidecarset.NewStatusStrategy(strategy), optsGetter, parts)
}
