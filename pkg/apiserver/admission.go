package apiserver

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericapiserver "k8s.io/apiserver/pkg/server"
	kubeinformers "k8s.io/client-go/informers"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/admission/plugin/crossvalidation"
	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/bytebudget"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/injection"
	"github.com/sidecarset/apiserver/pkg/namespacecap"
	sidecarsetstorage "github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset/storage"
)

// AdmissionInitializers returns the initializers handing the SidecarSetCrossValidation admission
// plugin its inputs, read from the server's informers, and the ResourceQuota plugin its quota
// configuration (quotaConfiguration): set it as the generic options' ExtraAdmissionInitializers
// before applying them to the config.
func (c *Config) AdmissionInitializers(gc *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
	set, err := c.ExtraConfig.informerSet(gc.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	if gc.SharedInformerFactory != nil {
		foreignPolicies(gc.SharedInformerFactory)
	}
	sets := set.own.Apps().V1alpha1().SidecarSets()
	revs := set.own.Apps().V1alpha1().SidecarSetRevisions()
	if err := sets.Informer().AddIndexers(cache.Indexers{crossvalidation.ConflictIndex: crossvalidation.IndexConflictKeys}); err != nil {
		return nil, err
	}
	inputs := crossvalidation.Inputs{
		SidecarSets:                     sets.Lister(),
		SidecarSetIndex:                 sets.Informer().GetIndexer(),
		Revisions:                       revs.Lister(),
		Whitelist:                       func() (*string, error) { return nil, nil },
		PatchPodMetadataDefaultsAllowed: c.ExtraConfig.PatchPodMetadataDefaultsAllowed,
		RefusePodSecurityViolations:     c.ExtraConfig.RefusePodSecurityViolations,
		MaxPerNamespace:                 c.ExtraConfig.MaxNamespacedPerNamespace,
		MaxBytesPerNamespace:            c.ExtraConfig.MaxNamespacedBytesPerNamespace,
	}
	if c.ExtraConfig.MaxNamespacedBytesPerNamespace > 0 {
		meter, err := namespaceMeter(sets.Informer(), revs.Informer())
		if err != nil {
			return nil, err
		}
		inputs.NamespaceUsage = meter.Usage
	}
	synced := []cache.InformerSynced{sets.Informer().HasSynced, revs.Informer().HasSynced}
	stores := map[string]cache.Store{"sidecarsets": sets.Informer().GetStore(), "sidecarsetrevisions": revs.Informer().GetStore()}
	var whitelistVersion func() string
	if gc.ClientConfig != nil {
		cms, err := set.watchWhitelist(gc.ClientConfig, c.ExtraConfig.Namespace)
		if err != nil {
			return nil, err
		}
		inf := cms.Core().V1().ConfigMaps()
		inputs.Whitelist = crossvalidation.WhitelistFrom(inf.Lister().ConfigMaps(c.ExtraConfig.Namespace))
		whitelistVersion = cachedVersion(inf.Lister().ConfigMaps(c.ExtraConfig.Namespace), crossvalidation.WhitelistConfigMap)
		synced = append(synced, inf.Informer().HasSynced)
		namespaces := gc.SharedInformerFactory.Core().V1().Namespaces()
		inputs.Namespaces = namespaces.Lister()
		synced = append(synced, namespaces.Informer().HasSynced)
	}
	if gc.LoopbackClientConfig != nil {
		own, err := clientset.NewForConfig(gc.LoopbackClientConfig)
		if err != nil {
			return nil, err
		}
		cached, err := countNamespaced(sets.Informer())
		if err != nil {
			return nil, err
		}
		inputs.CountNamespaced = nearCapFromStorage(cached, c.ExtraConfig.MaxNamespacedPerNamespace,
			func(ctx context.Context, ns string, limit int64) (int, error) {
				return storedCount(ctx, func(ctx context.Context, opts metav1.ListOptions) (metav1.ListInterface, int, error) {
					list, err := own.AppsV1alpha1().NamespacedSidecarSets(ns).List(ctx, opts)
					if err != nil {
						return nil, 0, err
					}
					return list, len(list.Items), nil
				}, limit)
			})
	}
	inputs.HasSynced = allSynced(synced)
	serveCacheMetrics(stores, whitelistVersion)
	return []admission.PluginInitializer{
		crossvalidation.Initializer{Inputs: inputs},
		quotaInitializer{config: quotaConfiguration(sets.Lister())},
	}, nil
}

// foreignPolicies registers in the generic server's informer factory, before its admission
// plugins take them, the informers of MutatingAdmissionPolicies and their bindings without the
// ones this server writes: those mutate pods, never a request this server serves, yet the
// MutatingAdmissionPolicy plugin compiles every policy it is shown, each group policy again on
// every rewrite (tens of MB held, and CPU through a bulk apply). Other policies, a cluster
// administrator's on SidecarSets included, still apply to the requests this server serves.
func foreignPolicies(f kubeinformers.SharedInformerFactory) {
	notOwned := func(lo *metav1.ListOptions) {
		lo.LabelSelector = apps.ManagedByLabel + "!=" + apps.ManagedByValue
	}
	f.InformerFor(&admissionregistrationv1.MutatingAdmissionPolicy{}, func(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return admissioninformers.NewFilteredMutatingAdmissionPolicyInformer(kube, resync, cache.Indexers{}, notOwned)
	})
	f.InformerFor(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, func(kube kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return admissioninformers.NewFilteredMutatingAdmissionPolicyBindingInformer(kube, resync, cache.Indexers{}, notOwned)
	})
}

// newReviewer builds pod injection on the SidecarSet informer, the revision lister and, when the
// server knows the main cluster (shared is its informer factory), its namespace lister; sortByName
// places the sidecars in name order; the versions of SidecarSets replaced or deleted are kept for
// retiredFor, as long as a policy compiled from them may still run.
func newReviewer(shared kubeinformers.SharedInformerFactory, set *informerSet, sortByName bool, retiredFor time.Duration) *webhook.Reviewer {
	index := injection.NewIndex()
	retired := &injection.Retired{Keep: retiredFor}
	set.index, set.seen = index, webhook.NewMarks()
	sets := set.own.Apps().V1alpha1().SidecarSets().Informer()
	indexed, err := sets.AddEventHandler(webhook.Indexer{Index: index, Seen: set.seen, Retired: retired, Clock: clock.RealClock{}}.Handler())
	if err != nil {
		panic(err) // only fails on a stopped informer, which cannot be the case before start
	}
	revs := set.own.Apps().V1alpha1().SidecarSetRevisions()
	// The index is filled by the handler, which receives the informer's first list after the
	// informer's store has it: until the handler has, the index may miss SidecarSets, and a pod
	// would be admitted without them.
	synced := []cache.InformerSynced{sets.HasSynced, indexed.HasSynced, revs.Informer().HasSynced}
	namespaces := corelisters.NewNamespaceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	if shared != nil {
		ns := shared.Core().V1().Namespaces()
		namespaces = ns.Lister()
		synced = append(synced, ns.Informer().HasSynced)
	}
	return &webhook.Reviewer{
		Index:      index,
		Retired:    retired,
		Namespaces: namespaces,
		Revisions:  revs.Lister(),
		Clock:      clock.RealClock{},
		Rand:       rand.Float64,
		// A SidecarSet already injected in this admission (by its policy, or by this webhook
		// before a reinvocation) is left as it is.
		Options:   injection.Options{SkipInjected: true, SortSidecarContainersByName: sortByName},
		HasSynced: allSynced(synced),
	}
}

// allSynced reports whether every informer has synced.
func allSynced(synced []cache.InformerSynced) func() bool {
	return func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
}

// storedCount counts the objects list returns, reading one: storage counts the rest of a page
// (metadata.remainingItemCount, exact for a list without selectors), so a create near the cap
// does not decode the namespace's objects. When the count is not given, it reads up to limit.
func storedCount(ctx context.Context, list func(context.Context, metav1.ListOptions) (metav1.ListInterface, int, error), limit int64) (int, error) {
	meta, n, err := list(ctx, metav1.ListOptions{Limit: 1})
	switch {
	case err != nil:
		return 0, err
	case meta.GetContinue() == "":
		return n, nil
	case meta.GetRemainingItemCount() != nil:
		return n + int(*meta.GetRemainingItemCount()), nil
	}
	_, n, err = list(ctx, metav1.ListOptions{Limit: limit})
	return n, err
}

// namespacedByNamespace indexes the SidecarSet informer's NamespacedSidecarSets (named
// <namespace>.<name>) by their namespace.
const namespacedByNamespace = "namespaced"

// countNamespaced returns a function counting a namespace's NamespacedSidecarSets in the informer
// (an index), for the per-namespace cap: a create costs the same however many are stored. The
// informer may lag a write by milliseconds, as creates in flight at the same moment already do.
func countNamespaced(inf cache.SharedIndexInformer) (func(context.Context, string) (int, error), error) {
	if err := addNamespacedIndex(inf); err != nil {
		return nil, err
	}
	indexer := inf.GetIndexer()
	return func(_ context.Context, ns string) (int, error) {
		objs, err := indexer.ByIndex(namespacedByNamespace, ns)
		return len(objs), err
	}, nil
}

// namespaceMeter measures the namespaces' NamespacedSidecarSets and their revisions for the byte
// budget, from the SidecarSet and revision informers indexed by namespace.
func namespaceMeter(sets, revs cache.SharedIndexInformer) (*bytebudget.Meter, error) {
	if err := addNamespacedIndex(sets); err != nil {
		return nil, err
	}
	if _, ok := revs.GetIndexer().GetIndexers()[bytebudget.RevisionIndex]; !ok {
		if err := revs.AddIndexers(cache.Indexers{bytebudget.RevisionIndex: bytebudget.IndexRevisionNamespace}); err != nil {
			return nil, err
		}
	}
	return &bytebudget.Meter{Objects: sets.GetIndexer(), ObjectIndex: namespacedByNamespace, Revisions: revs.GetIndexer()}, nil
}

// addNamespacedIndex adds the index namespacedByNamespace to the SidecarSet informer, once.
func addNamespacedIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[namespacedByNamespace]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{namespacedByNamespace: func(obj interface{}) ([]string, error) {
		if ss, ok := obj.(*v1alpha1.SidecarSet); ok {
			if ns, _, ok := v1alpha1.SplitNamespacedName(ss.Name); ok {
				return []string{ns}, nil
			}
		}
		return nil, nil
	}})
}

// namespaceCap is the cap on the NamespacedSidecarSets of a namespace the storage holds under
// concurrent creates, counting from the SidecarSet informer while it is synced.
func (c completedConfig) namespaceCap() (sidecarsetstorage.NamespaceCap, error) {
	limit := namespacecap.Limit(c.ExtraConfig.MaxNamespacedPerNamespace)
	if !limit.Enabled() || c.ExtraConfig.informers == nil {
		return sidecarsetstorage.NamespaceCap{Limit: limit}, nil
	}
	inf := c.ExtraConfig.informers.own.Apps().V1alpha1().SidecarSets().Informer()
	count, err := countNamespaced(inf)
	if err != nil {
		return sidecarsetstorage.NamespaceCap{}, err
	}
	return sidecarsetstorage.NamespaceCap{Limit: limit, Cached: func(ns string) (int, error) {
		if !inf.HasSynced() {
			return 0, errors.New("the SidecarSet cache has not synced yet")
		}
		return count(context.Background(), ns)
	}}, nil
}

// nearCapFromStorage counts with cached, and from storage (at most limit+1 objects) when cached
// comes within a margin of the cap: the cache may not show the last creates yet, which matters
// only near the cap, and a namespace far from it costs a create no read of storage.
func nearCapFromStorage(cached func(context.Context, string) (int, error), limit int,
	stored func(ctx context.Context, ns string, limit int64) (int, error)) func(context.Context, string) (int, error) {
	return func(ctx context.Context, ns string) (int, error) {
		n, err := cached(ctx, ns)
		if err != nil || !namespacecap.Limit(limit).Near(n) {
			return n, err
		}
		return stored(ctx, ns, int64(limit)+1)
	}
}
