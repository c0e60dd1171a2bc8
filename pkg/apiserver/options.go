package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/sidecarset/apiserver/pkg/admission/plugin/crossvalidation"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// NewRecommendedOptions returns the generic server options of this server: SidecarSets stored at
// v1alpha1 under etcdPathPrefix, and the admission chain with the SidecarSet cross-object
// validation plugin after the recommended plugins, then ResourceQuota last, as in kube-apiserver
// (a request refused by an earlier plugin is never charged to a quota). The watch cache is off
// for this server's resources (WatchCacheSizes).
func NewRecommendedOptions(etcdPathPrefix string) *genericoptions.RecommendedOptions {
	o := genericoptions.NewRecommendedOptions(etcdPathPrefix, storageCodec())
	o.Etcd.WatchCacheSizes = WatchCacheSizes
	o.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		v1alpha1.SchemeGroupVersion, schema.GroupKind{Group: v1alpha1.GroupName})
	crossvalidation.Register(o.Admission.Plugins)
	resourcequota.Register(o.Admission.Plugins)
	o.Admission.RecommendedPluginOrder = append(o.Admission.RecommendedPluginOrder, crossvalidation.PluginName, resourcequota.PluginName)
	return o
}

// WatchCacheSizes turns the watch cache off for the resources this server stores (the default of
// --watch-cache-sizes). The cache would keep a second copy of every SidecarSet and revision, whole,
// in each replica, beside the informers the server runs on (which keep what injection and the
// controller read): about half of what 50,000 SidecarSets cost the server. Its watchers are those
// informers, one per replica, and a few clients (kubectl --watch, GitOps tools), which etcd
// serves directly; reads and lists of these resources go to etcd, as a quorum read would anyway.
var WatchCacheSizes = []string{
	"sidecarsets.apps.kruise.io#0",
	"namespacedsidecarsets.apps.kruise.io#0",
	"sidecarsetrevisions.apps.kruise.io#0",
}
