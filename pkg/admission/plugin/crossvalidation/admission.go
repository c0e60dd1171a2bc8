// Package crossvalidation is the in-process admission plugin that validates a SidecarSet against
// everything outside itself: the other SidecarSets (container, volume and annotation conflicts),
// its canary base, the patchPodMetadata whitelist ConfigMap, and the revision its
// injectionStrategy names; and a SidecarSetRevision a client imports, as a write of its SidecarSet
// injecting the revision's snapshot. It runs after the registry strategy accepted the object, so the checks
// see the defaulted SidecarSet.
package crossvalidation

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
	"github.com/sidecarset/apiserver/pkg/bytebudget"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection/revision"
	"github.com/sidecarset/apiserver/pkg/namespacecap"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// PluginName is the name of the plugin in --enable-admission-plugins.
const PluginName = "SidecarSetCrossValidation"

// Inputs are the plugin's sources of other objects.
type Inputs struct {
	// SidecarSets lists the stored SidecarSets.
	SidecarSets listers.SidecarSetLister
	// SidecarSetIndex is the store behind SidecarSets, with the index ConflictIndex
	// (IndexConflictKeys): a write is checked only against the SidecarSets that share a name
	// with it, not against every stored one.
	SidecarSetIndex cache.Indexer
	// Revisions lists the stored SidecarSetRevisions.
	Revisions listers.SidecarSetRevisionLister
	// Whitelist returns the patchPodMetadata whitelist JSON, nil when not configured.
	Whitelist func() (*string, error)
	// PatchPodMetadataDefaultsAllowed allows patchPodMetadata without a whitelist.
	PatchPodMetadataDefaultsAllowed bool
	// Namespaces lists the main cluster's namespaces (nil without one): a SidecarSet whose sidecars
	// break Pod Security baseline is told which of the namespaces it selects would refuse its pods.
	Namespaces corelisters.NamespaceLister
	// RefusePodSecurityViolations refuses such a SidecarSet when a namespace it selects enforces
	// baseline or restricted, instead of warning.
	RefusePodSecurityViolations bool
	// MaxPerNamespace, when positive, is the most NamespacedSidecarSets one namespace may hold
	// (--max-namespaced-sidecarsets-per-namespace): a create beyond it is refused.
	MaxPerNamespace int
	// CountNamespaced counts the NamespacedSidecarSets stored in a namespace, from storage (an
	// informer may not have seen the creates just before).
	CountNamespaced func(ctx context.Context, namespace string) (int, error)
	// MaxBytesPerNamespace, when positive, is the most bytes the NamespacedSidecarSets of one
	// namespace and their revisions may store (--max-namespaced-bytes-per-namespace): a write that
	// would take the namespace past it, and grows it, is refused.
	MaxBytesPerNamespace int64
	// NamespaceUsage returns what the NamespacedSidecarSets of a namespace and their revisions
	// store, as this replica's informers hold them.
	NamespaceUsage func(namespace string) (bytebudget.Usage, error)
	// HasSynced reports whether the listers are ready.
	HasSynced func() bool
}

// WantsInputs is implemented by plugins that need Inputs.
type WantsInputs interface {
	SetInputs(Inputs)
	admission.InitializationValidator
}

// Initializer hands Inputs to the plugins that want them.
type Initializer struct {
	Inputs Inputs
}

// Initialize sets the inputs of plugin if it wants them.
func (i Initializer) Initialize(plugin admission.Interface) {
	if w, ok := plugin.(WantsInputs); ok {
		w.SetInputs(i.Inputs)
	}
}

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

// Plugin validates SidecarSet creates and updates against other objects.
type Plugin struct {
	*admission.Handler
	in Inputs

	internal internalCache // the stored SidecarSets converted, for the conflict checks
}

var (
	_ admission.ValidationInterface = &Plugin{}
	_ WantsInputs                   = &Plugin{}
)

// SetInputs sets the plugin's inputs.
func (p *Plugin) SetInputs(in Inputs) {
	p.in = in
	p.SetReadyFunc(in.HasSynced)
}

// ValidateInitialization fails when inputs are missing.
func (p *Plugin) ValidateInitialization() error {
	if p.in.SidecarSets == nil || p.in.Revisions == nil || p.in.Whitelist == nil || p.in.HasSynced == nil || p.in.SidecarSetIndex == nil {
		return fmt.Errorf("%s: missing inputs", PluginName)
	}
	if _, ok := p.in.SidecarSetIndex.GetIndexers()[ConflictIndex]; !ok {
		return fmt.Errorf("%s: the SidecarSet store has no index %s", PluginName, ConflictIndex)
	}
	return nil
}

// Validate checks a SidecarSet write.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	if rev, ok := a.GetObject().(*apps.SidecarSetRevision); ok && a.GetResource().GroupResource() == apps.Resource("sidecarsetrevisions") {
		if a.GetOperation() != admission.Create {
			return nil
		}
		if !p.WaitForReady() {
			return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
		}
		return p.validateRevision(ctx, rev)
	}
	ss, kind, name := engineForm(a)
	if ss == nil {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, fmt.Errorf("not yet ready to handle request"))
	}
	if kind == "NamespacedSidecarSet" && a.GetOperation() == admission.Create {
		if err := p.checkNamespaceCap(ctx, a.GetNamespace()); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	if kind == "NamespacedSidecarSet" {
		if err := p.checkNamespaceBytes(a); err != nil {
			return err
		}
	}
	var before *apps.SidecarSet
	if old, ok := a.GetOldObject().(*apps.NamespacedSidecarSet); ok && kind == "NamespacedSidecarSet" && a.GetOperation() == admission.Update {
		before = old.AsSidecarSet()
	}
	errs, err := p.check(ss, before)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(errs) == 0 {
		if errs, err = p.checkPodSecurity(ctx, ss, true); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind(kind), name, errs)
	}
	return nil
}

// checkNamespaceCap refuses one more NamespacedSidecarSet in ns when ns holds MaxPerNamespace
// already: every one of them takes part in planning the policies and webhooks of its namespace,
// and a ResourceQuota is the namespace owner's to set; this cap is the cluster's. Creates in
// flight at the same moment are each counted without the others: near the cap the storage
// settles each once written (package namespacecap), and this check spares most of them the write.
func (p *Plugin) checkNamespaceCap(ctx context.Context, ns string) error {
	if p.in.MaxPerNamespace <= 0 || p.in.CountNamespaced == nil {
		return nil
	}
	n, err := p.in.CountNamespaced(ctx, ns)
	if err != nil {
		return err
	}
	if limit := namespacecap.Limit(p.in.MaxPerNamespace); !limit.Keeps(n) {
		return limit.Refusal(ns, n)
	}
	return nil
}

// checkNamespaceBytes refuses a create or update of a NamespacedSidecarSet that would take its
// namespace past MaxBytesPerNamespace and grows it (package bytebudget): the written object counts
// at its new size in place of its old one, with the revision the controller will record for it
// when none of its revisions holds its injected part. Writes that do not grow the namespace pass,
// so a namespace past its budget can still shrink.
func (p *Plugin) checkNamespaceBytes(a admission.Attributes) error {
	budget := bytebudget.Budget(p.in.MaxBytesPerNamespace)
	n, ok := a.GetObject().(*apps.NamespacedSidecarSet)
	if !budget.Enabled() || p.in.NamespaceUsage == nil || !ok {
		return nil
	}
	written, err := measureNamespaced(n)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	use, err := p.in.NamespaceUsage(a.GetNamespace())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if old, ok := a.GetOldObject().(*apps.NamespacedSidecarSet); ok && a.GetOperation() == admission.Update && !use.Has(written.Name) {
		// Written through another replica, and not in this one's cache yet: counted as stored.
		was, err := measureNamespaced(old)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		use = use.With(was)
	}
	if after := use.After(written); !budget.Admits(use.Bytes, after) {
		return admission.NewForbidden(a, budget.Refusal(a.GetNamespace(), use.Bytes, after))
	}
	return nil
}

// measureNamespaced measures a NamespacedSidecarSet as it will be stored.
func measureNamespaced(n *apps.NamespacedSidecarSet) (bytebudget.Object, error) {
	wire := &v1alpha1.NamespacedSidecarSet{}
	if err := v1alpha1.Convert_apps_NamespacedSidecarSet_To_v1alpha1_NamespacedSidecarSet(n, wire, nil); err != nil {
		return bytebudget.Object{}, err
	}
	return bytebudget.MeasureNamespaced(wire)
}

// validateRevision checks a revision a client imports (create on sidecarsetrevisions) as a write
// of its SidecarSet injecting the revision's snapshot would be checked: the patchPodMetadata
// whitelist, then the conflicts with the other SidecarSets, then Pod Security. While the SidecarSet
// exists, that is the stored SidecarSet with its injected part (containers, init containers,
// volumes, imagePullSecrets, patchPodMetadata) replaced by the snapshot: same selectors, labels and
// namespaces. Before it exists (kubectl sidecarset migrate imports history first), nothing says
// which pods it will select: the whitelist is applied with the revision's labels (OpenKruise copies
// the SidecarSet's), conflicts are left to the SidecarSet's create, and Pod Security only warns.
// The canary and injectionStrategy checks concern a SidecarSet's own fields, not a snapshot's.
func (p *Plugin) validateRevision(ctx context.Context, rev *apps.SidecarSetRevision) error {
	ss, exists, err := p.revisionAsSidecarSet(rev)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	whitelist, err := p.in.Whitelist()
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	errs := validation.ValidatePatchPodMetadataWhitelist(ss, whitelist, p.in.PatchPodMetadataDefaultsAllowed)
	if len(errs) == 0 && exists {
		others, err := p.others(ss)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		errs = validation.ValidateConflicts(ss, others)
	}
	if len(errs) == 0 {
		if errs, err = p.checkPodSecurity(ctx, ss, exists); err != nil {
			return apierrors.NewInternalError(err)
		}
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind("SidecarSetRevision"), rev.Name, errs)
	}
	return nil
}

// revisionAsSidecarSet returns the SidecarSet that would inject the revision's snapshot, and
// whether its SidecarSet exists.
func (p *Plugin) revisionAsSidecarSet(rev *apps.SidecarSetRevision) (*apps.SidecarSet, bool, error) {
	injected := validation.InjectedSpec(rev)
	wire, err := p.in.SidecarSets.Get(rev.SidecarSetName)
	if apierrors.IsNotFound(err) {
		return &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: rev.SidecarSetName, Labels: rev.Labels},
			Spec: *injected}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	ss, err := toInternal(wire)
	if err != nil {
		return nil, false, err
	}
	ss.Spec.InitContainers, ss.Spec.Containers, ss.Spec.Volumes = injected.InitContainers, injected.Containers, injected.Volumes
	ss.Spec.ImagePullSecrets, ss.Spec.PatchPodMetadata = injected.ImagePullSecrets, injected.PatchPodMetadata
	return ss, true, nil
}

// engineForm returns the SidecarSet a write of sidecarsets or namespacedsidecarsets takes part
// in injection as, with the kind and name to report errors on; nil for other writes.
func engineForm(a admission.Attributes) (*apps.SidecarSet, string, string) {
	switch a.GetResource().GroupResource() {
	case apps.Resource("sidecarsets"):
		if ss, ok := a.GetObject().(*apps.SidecarSet); ok {
			return ss, "SidecarSet", ss.Name
		}
	case apps.Resource("namespacedsidecarsets"):
		if n, ok := a.GetObject().(*apps.NamespacedSidecarSet); ok {
			return n.AsSidecarSet(), "NamespacedSidecarSet", n.Name
		}
	}
	return nil, "", ""
}

// check gathers the other objects and runs the pure checks; conflicts are checked last, only when
// everything else passed. before, for the update of a NamespacedSidecarSet, is the object as it
// was: a conflict it already had is not held against the update (a cluster SidecarSet written
// since may collide with it, and wins in the pods both select: the tenant may still change
// anything, renaming the colliding sidecar included).
func (p *Plugin) check(ss, before *apps.SidecarSet) (field.ErrorList, error) {
	whitelist, err := p.in.Whitelist()
	if err != nil {
		return nil, err
	}
	errs := validation.ValidatePatchPodMetadataWhitelist(ss, whitelist, p.in.PatchPodMetadataDefaultsAllowed)
	canaryErrs, err := p.checkCanary(ss)
	if err != nil {
		return nil, err
	}
	errs = append(errs, canaryErrs...)
	errs = append(errs, p.checkRevision(ss)...)
	if len(errs) > 0 {
		return errs, nil
	}
	others, err := p.others(ss)
	if err != nil {
		return nil, err
	}
	errs = validation.ValidateConflicts(ss, others)
	if before != nil && len(errs) > 0 {
		known := map[string]bool{}
		for _, e := range validation.ValidateConflicts(before, others) {
			known[e.Error()] = true
		}
		errs = slices.DeleteFunc(errs, func(e *field.Error) bool { return known[e.Error()] })
	}
	return errs, nil
}

// checkPodSecurity warns the author of a SidecarSet whose sidecars break Pod Security baseline,
// naming the namespaces it selects that enforce baseline or restricted, where its pods would be
// refused; with RefusePodSecurityViolations such a SidecarSet is refused when there are any.
// Without knownSelection (a revision imported before its SidecarSet) the namespaces it will
// select are unknown: it only warns.
func (p *Plugin) checkPodSecurity(ctx context.Context, ss *apps.SidecarSet, knownSelection bool) (field.ErrorList, error) {
	violations := validation.PodSecurityViolations(ss)
	if len(violations) == 0 {
		return nil, nil
	}
	var enforcing []string
	if p.in.Namespaces != nil && knownSelection {
		nss, err := p.in.Namespaces.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, ns := range nss {
			if !validation.EnforcesBaseline(ns.Labels) {
				continue
			}
			selects, err := apps.SelectsNamespace(ss.Spec.Namespace, ss.Spec.NamespaceSelector, ns.Name, ns.Labels)
			if err != nil {
				return field.ErrorList{field.Invalid(field.NewPath("spec", "namespaceSelector"), ss.Spec.NamespaceSelector, err.Error())}, nil
			}
			if selects {
				enforcing = append(enforcing, ns.Name)
			}
		}
		sort.Strings(enforcing)
	}
	msg := validation.PodSecurityMessage(violations, enforcing)
	if p.in.RefusePodSecurityViolations && len(enforcing) > 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "containers"), msg+" (the server refuses such SidecarSets: --refuse-pod-security-violations)")}, nil
	}
	warning.AddWarning(ctx, "", msg)
	return nil, nil
}

func (p *Plugin) checkCanary(ss *apps.SidecarSet) (field.ErrorList, error) {
	baseName, ok := validation.IsCanary(ss)
	if !ok || baseName == ss.Name {
		return validation.ValidateCanary(ss, nil, nil), nil
	}
	wire, err := p.in.SidecarSets.Get(baseName)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	var base *apps.SidecarSet
	if err == nil {
		if base, err = toInternal(wire); err != nil {
			return nil, err
		}
	}
	return validation.ValidateCanary(ss, base, err), nil
}

// checkRevision requires the revision named by injectionStrategy.revision to exist now.
func (p *Plugin) checkRevision(ss *apps.SidecarSet) field.ErrorList {
	r := ss.Spec.InjectionStrategy.Revision
	if r == nil || (r.RevisionName == nil && r.CustomVersion == nil) {
		return nil
	}
	path := field.NewPath("spec", "injectionStrategy", "revision")
	revisions := revision.Lister{Revisions: p.in.Revisions}
	if r.RevisionName != nil {
		rev, err := revisions.Revision(*r.RevisionName)
		if err != nil {
			return field.ErrorList{field.Invalid(path.Child("revisionName"), *r.RevisionName,
				fmt.Sprintf("Cannot find specific ControllerRevision, err: %v", err))}
		}
		if _, _, namespaced := apps.SplitNamespacedName(ss.Name); namespaced && rev.SidecarSetName != ss.Name {
			// A namespace's SidecarSet injects only its own revisions, never another's sidecars.
			return field.ErrorList{field.Invalid(path.Child("revisionName"), *r.RevisionName,
				"is not a revision of this NamespacedSidecarSet")}
		}
		return nil
	}
	if _, err := revisions.LatestWithCustomVersion(ss.Name, *r.CustomVersion); err != nil {
		return field.ErrorList{field.Invalid(path.Child("customVersion"), *r.CustomVersion,
			fmt.Sprintf("Cannot find specific ControllerRevision, err: %v", err))}
	}
	return nil
}

// others returns, in internal form, the stored SidecarSets a write of ss is checked against: those
// sharing a conflict key with ss (validation.ConflictKeys, through the index ConflictIndex; no
// other can conflict with it) whose selectors overlap ss's (validation.Overlapping, checked
// before converting them), and, for a cluster SidecarSet, the cluster SidecarSets only, so that
// no name a namespace editor takes (a container, volume or annotation of a NamespacedSidecarSet)
// can refuse an administrator's write; for a NamespacedSidecarSet the cluster SidecarSets and
// those of its own namespace, the only ones that may select its pods. A NamespacedSidecarSet that
// collides with a cluster SidecarSet written after it is not injected into the pods both select
// (the cluster SidecarSet wins, see injection.Shadowed).
func (p *Plugin) others(ss *apps.SidecarSet) ([]*apps.SidecarSet, error) {
	namespace, _, namespaced := apps.SplitNamespacedName(ss.Name)
	overlaps := validation.Overlapping(ss)
	keys := validation.ConflictKeys(ss)
	seen := map[*v1alpha1.SidecarSet]bool{} // with several keys, one stored object is under each
	var out []*apps.SidecarSet
	for _, key := range keys {
		objs, err := p.in.SidecarSetIndex.ByIndex(ConflictIndex, key)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			w, ok := obj.(*v1alpha1.SidecarSet)
			if !ok {
				continue
			}
			if ns, _, ok := apps.SplitNamespacedName(w.Name); ok && (!namespaced || ns != namespace) {
				continue
			}
			if !overlaps(w.Spec.Selector, w.Spec.Namespace, w.Spec.NamespaceSelector) {
				continue
			}
			if len(keys) > 1 {
				if seen[w] {
					continue
				}
				seen[w] = true
			}
			o, err := p.internal.get(w)
			if err != nil {
				return nil, err
			}
			out = append(out, o)
		}
	}
	p.internal.sweep(p.in.SidecarSetIndex)
	return out, nil
}

// ConflictIndex is the index of the SidecarSet store the plugin reads, by IndexConflictKeys.
const ConflictIndex = "conflictKeys"

// IndexConflictKeys files a stored SidecarSet under its validation.ConflictKeys.
func IndexConflictKeys(obj any) ([]string, error) {
	w, ok := obj.(*v1alpha1.SidecarSet)
	if !ok {
		return nil, nil
	}
	ss, err := toInternal(w)
	if err != nil {
		return nil, err
	}
	return validation.ConflictKeys(ss), nil
}

// internalCache keeps the internal form of each stored SidecarSet at its resourceVersion: a
// SidecarSet write is checked against the others that share a name with it and may select its
// pods, possibly thousands (SidecarSets declaring the same volume for overlapping workloads),
// and converting them all for each write would make a bulk apply of n such SidecarSets cost n²
// conversions. The converted objects are only read.
type internalCache struct {
	mu   sync.Mutex
	byID map[types.UID]*internalEntry
	// sweepAbove is the size above which the next get sweeps the cache.
	sweepAbove int
}

type internalEntry struct {
	key, resourceVersion string
	ss                   *apps.SidecarSet
}

// get returns the internal form of w, converting it only when it changed since the last call.
func (c *internalCache) get(w *v1alpha1.SidecarSet) (*apps.SidecarSet, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byID[w.UID]; e != nil && e.resourceVersion == w.ResourceVersion && w.UID != "" {
		return e.ss, nil
	}
	ss, err := toInternal(w)
	if err != nil {
		return nil, err
	}
	key, err := cache.MetaNamespaceKeyFunc(w)
	if err != nil || w.UID == "" {
		return ss, nil
	}
	if c.byID == nil {
		c.byID = map[types.UID]*internalEntry{}
	}
	c.byID[w.UID] = &internalEntry{key: key, resourceVersion: w.ResourceVersion, ss: ss}
	return ss, nil
}

// sweep forgets the SidecarSets no longer in store once the cache has doubled (plus a margin)
// since the last sweep: amortized over the conversions that filled it, a write costs a constant
// share of a sweep.
func (c *internalCache) sweep(store cache.Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) <= c.sweepAbove {
		return
	}
	for uid, e := range c.byID {
		obj, exists, err := store.GetByKey(e.key)
		if w, ok := obj.(*v1alpha1.SidecarSet); err != nil || !exists || !ok || w.UID != uid {
			delete(c.byID, uid)
		}
	}
	c.sweepAbove = 2*len(c.byID) + 64
}

func toInternal(in *v1alpha1.SidecarSet) (*apps.SidecarSet, error) {
	out := &apps.SidecarSet{}
	if err := v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet(in.DeepCopy(), out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// WhitelistConfigMap is the ConfigMap, in the server's namespace, holding the patchPodMetadata
// whitelist under WhitelistKey (OpenKruise's kruise-configuration format).
const (
	WhitelistConfigMap = "kruise-configuration"
	WhitelistKey       = "SidecarSet_PatchPodMetadata_WhiteList"
)

// WhitelistFrom returns a whitelist source reading the ConfigMap from a lister of the server's
// namespace; a missing ConfigMap or key means no whitelist.
func WhitelistFrom(configMaps corelisters.ConfigMapNamespaceLister) func() (*string, error) {
	return func() (*string, error) {
		cm, err := configMaps.Get(WhitelistConfigMap)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		v, ok := cm.Data[WhitelistKey]
		if !ok {
			return nil, nil
		}
		return &v, nil
	}
}
