package apiserver

import (
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sidecarset/apiserver/pkg/admission/plugin/crossvalidation"
	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/podcache"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/pull"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/resize"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	informers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions"
	"github.com/sidecarset/apiserver/pkg/informers/allsidecarsets"
	"github.com/sidecarset/apiserver/pkg/informers/sharedspec"
	"github.com/sidecarset/apiserver/pkg/injection"
)

// informerSet holds the informer factories the server starts after it listens.
type informerSet struct {
	own        informers.SharedInformerFactory
	configMaps kubeinformers.SharedInformerFactory
	// podInformers watches the main cluster's pods over protobuf; pods is what the controller keeps
	// of them, with the namespaces of the generic server's factory. Both nil without a main cluster.
	podInformers kubeinformers.SharedInformerFactory
	pods         *podcache.Source
	// index is the injection index of the SidecarSets, shared by the webhook and the controller.
	index *injection.Index
	// seen is how far the index has taken the events of each kind in (see settleWrites).
	seen *webhook.Marks
	// intakeOpen reports whether the intake webhooks are in place (intakeInPlace); nil without a
	// main cluster. Set while the server is built, read once it serves.
	intakeOpen func() bool
	// resizes is what the controller and the rollout view know of in-place resizes; nil without
	// a main cluster.
	resizes *resize.Support
	// preDownloads pulls new sidecar images ahead of upgrades; nil without a main cluster.
	preDownloads *pull.PreDownloads
	// direct are the stores the informers of own read in the process (directClient), once
	// install has set them.
	direct atomic.Pointer[directStores]
}

// informerSet returns the server's informers, creating the factory of its own API on the
// loopback client the first time: the admission plugin's initializer, which runs first when
// admission is on, and New share them.
func (c *ExtraConfig) informerSet(loopback *rest.Config) (*informerSet, error) {
	if c.informers == nil {
		client, err := clientset.NewForConfig(loopback)
		if err != nil {
			return nil, err
		}
		sharer := &sharedspec.Sharer{}
		set := &informerSet{}
		direct := directClient{Interface: client, stores: &set.direct, scheme: Scheme}
		set.own = informers.NewSharedInformerFactoryWithOptions(listing{direct}, 0, informers.WithTransform(func(obj any) (any, error) {
			obj, err := stripManagedFields(obj)
			return sharer.Share(obj), err
		}))
		own := set.own
		c.informers = set
		// Registered first: the factory's SidecarSet informer is then the one of both kinds.
		sets := own.InformerFor(&v1alpha1.SidecarSet{}, allsidecarsets.NewInformer)
		sharer.Watch(sets.GetStore(), own.Apps().V1alpha1().SidecarSetRevisions().Informer().GetStore())
	}
	return c.informers, nil
}

func (s *informerSet) start(stop <-chan struct{}) {
	s.own.Start(stop)
	if s.configMaps != nil {
		s.configMaps.Start(stop)
	}
	if s.podInformers != nil {
		s.podInformers.Start(stop)
	}
	if s.preDownloads != nil {
		s.preDownloads.Start(stop)
	}
}

// watchPods sets up the main cluster's pod informer, keeping only what the controller reads of
// each pod. Pods are decoded from protobuf: a burst of pod events then costs a fraction of the
// garbage and CPU of JSON. start starts it once the server listens.
func (s *informerSet) watchPods(main *rest.Config, generic kubeinformers.SharedInformerFactory) error {
	kube, err := kubernetes.NewForConfig(protobuf(main))
	if err != nil {
		return err
	}
	s.podInformers = kubeinformers.NewSharedInformerFactory(kube, 0)
	s.pods, err = podcache.NewSource(s.podInformers.Core().V1().Pods(), generic.Core().V1().Namespaces())
	return err
}

// watchWhitelist watches only the whitelist ConfigMap in the main cluster's namespace.
func (s *informerSet) watchWhitelist(main *rest.Config, namespace string) (kubeinformers.SharedInformerFactory, error) {
	kube, err := kubernetes.NewForConfig(main)
	if err != nil {
		return nil, err
	}
	s.configMaps = kubeinformers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute,
		kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", crossvalidation.WhitelistConfigMap).String()
		}))
	return s.configMaps, nil
}

// protobuf returns a copy of cfg that talks protobuf, for the main cluster's pods.
func protobuf(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.ContentType = runtime.ContentTypeProtobuf
	out.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return out
}

// stripManagedFields drops the managedFields of the objects the server's own informers keep:
// nothing the server does reads them, and a SidecarSet's (its appliers' and the controller's
// status writes) are often larger than the rest of it.
func stripManagedFields(obj interface{}) (interface{}, error) {
	if o, err := meta.Accessor(obj); err == nil && o.GetManagedFields() != nil {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// listing is the loopback client of the server's own informers, which read their objects with
// paged lists, not watch-lists: this server stores its objects without a watch cache, and it serves
// a watch-list's initial events by decoding every object in one goroutine, where the pages of a
// list are decoded by each request's.
type listing struct {
	clientset.Interface
}

// IsWatchListSemanticsUnSupported tells client-go's reflectors to list.
func (listing) IsWatchListSemanticsUnSupported() bool { return true }
