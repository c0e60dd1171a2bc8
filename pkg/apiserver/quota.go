package apiserver

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// NamespacedSidecarSetsResource is the only namespaced resource this server stores; ResourceQuota
// counts it as count/namespacedsidecarsets.apps.kruise.io.
var NamespacedSidecarSetsResource = apps.Resource("namespacedsidecarsets")

// quotaConfiguration is what the ResourceQuota admission plugin evaluates: the object count of
// NamespacedSidecarSets, the one namespaced resource of this server (the plugin passes over
// cluster-scoped ones). Creates are charged to the namespace's ResourceQuotas in the main cluster
// (their status.used), and refused past status.hard, as kube-apiserver does for its own resources;
// the main cluster's resource quota controller recounts them from the list of the resource. The
// count per namespace is read from sets, the informer of both kinds (each NamespacedSidecarSet is
// there as the SidecarSet "<namespace>.<name>").
func quotaConfiguration(sets listers.SidecarSetLister) quota.Configuration {
	count := generic.NewObjectCountEvaluator(NamespacedSidecarSetsResource, namespacedIn(sets), "")
	return generic.NewConfiguration([]quota.Evaluator{count}, map[schema.GroupResource]struct{}{})
}

// namespacedIn lists the NamespacedSidecarSets of a namespace, as SidecarSets, from sets.
func namespacedIn(sets listers.SidecarSetLister) generic.ListFuncByNamespace {
	return func(namespace string) ([]runtime.Object, error) {
		all, err := sets.List(labels.Everything())
		if err != nil {
			return nil, err
		}
		var out []runtime.Object
		for _, ss := range all {
			if ns, _, ok := apps.SplitNamespacedName(ss.Name); ok && ns == namespace {
				out = append(out, ss)
			}
		}
		return out, nil
	}
}

// quotaInitializer hands the quota configuration to the ResourceQuota admission plugin (the
// generic initializer gives it the main cluster's client, its ResourceQuota informer and the
// server's drain signal).
type quotaInitializer struct {
	config quota.Configuration
}

var _ admission.PluginInitializer = quotaInitializer{}

// Initialize sets the quota configuration of plugin if it wants one.
func (i quotaInitializer) Initialize(plugin admission.Interface) {
	if w, ok := plugin.(initializer.WantsQuotaConfiguration); ok {
		w.SetQuotaConfiguration(i.config)
	}
}
