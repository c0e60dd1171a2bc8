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
// (a request refused by an earlier plugin is never charged to a quota).
func NewRecommendedOptions(etcdPathPrefix string) *genericoptions.RecommendedOptions {
	o := genericoptions.NewRecommendedOptions(etcdPathPrefix, Codecs.LegacyCodec(v1alpha1.SchemeGroupVersion))
	o.Etcd.StorageConfig.EncodeVersioner = runtime.NewMultiGroupVersioner(
		v1alpha1.SchemeGroupVersion, schema.GroupKind{Group: v1alpha1.GroupName})
	crossvalidation.Register(o.Admission.Plugins)
	resourcequota.Register(o.Admission.Plugins)
	o.Admission.RecommendedPluginOrder = append(o.Admission.RecommendedPluginOrder, crossvalidation.PluginName, resourcequota.PluginName)
	return o
}
