// Package apiserver assembles and runs the SidecarSet API server from a Config that the command
// line fills: the scheme, the apps.kruise.io and admission.kruise.io API groups and their storage,
// the informers every part reads (the server's own SidecarSets and revisions, the main cluster's
// pods, namespaces and whitelist ConfigMap), pod injection, the inputs of the SidecarSet admission
// plugin, and the post-start hook that starts the informers and, in the replica holding the
// controller Lease, the SidecarSet and policy controllers with their event broadcaster.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/pull"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/resize"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/view"
	"github.com/sidecarset/apiserver/pkg/registry/admission/sidecarinjection"
	sidecarsetstorage "github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset/storage"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarsetrevision"
)

// AdmissionGroupVersion is the group version serving pod injection to kube-apiserver.
var AdmissionGroupVersion = schema.GroupVersion{Group: "admission.kruise.io", Version: "v1"}

var (
	// Scheme knows the apps.kruise.io types, AdmissionReview and the meta types.
	Scheme = runtime.NewScheme()
	// Codecs serializes with Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	utilruntime.Must(admissionv1.AddToScheme(Scheme))
	metav1.AddToGroupVersion(Scheme, AdmissionGroupVersion)
	utilruntime.Must(Scheme.SetVersionPriority(AdmissionGroupVersion))
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}

// Injection modes (ExtraConfig.Injection).
const (
	// InjectionPolicy compiles each SidecarSet a policy can express into a MutatingAdmissionPolicy
	// that kube-apiserver evaluates; the webhook serves the rest.
	InjectionPolicy = "policy"
	// InjectionWebhook has the webhook inject every SidecarSet.
	InjectionWebhook = "webhook"
)

// Settings are the server's own settings, from its command line.
type Settings struct {
	// Namespace is the server's own namespace: it holds the patchPodMetadata whitelist ConfigMap
	// and the controller Lease; policies never inject its pods.
	Namespace string
	// LeaderElect makes only the replica holding the controller Lease run the controllers.
	LeaderElect bool
	// Workers is the number of SidecarSets the controller reconciles at once.
	Workers int
	// KubeAPIQPS and KubeAPIBurst limit the controllers' requests to the main cluster.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Injection is InjectionPolicy or InjectionWebhook.
	Injection string
	// WebhookConfiguration names the injection webhooks' configuration, whose match conditions the
	// server keeps current; empty leaves it alone.
	WebhookConfiguration string
	// InjectionOwner names the APIService that owns the policies and bindings the server writes
	// (garbage-collected with it); empty: none.
	InjectionOwner string
	// ExcludedNamespaces are never injected by policies, besides Namespace.
	ExcludedNamespaces []string
	// PolicyGrace is how long the webhook keeps injecting a SidecarSet after its policy changed.
	PolicyGrace time.Duration
	// MaxPolicyRequests is the most SidecarSets asking for the policy path
	// (apps.InjectionPathAnnotation) served first (policy.PlanInput.MaxPolicyRequests).
	MaxPolicyRequests int
	// WebhookLoadDelay is how long kube-apiserver may take to load a write of the injection
	// webhooks' configuration (see injectionsync.Intake).
	WebhookLoadDelay time.Duration
	// PatchPodMetadataDefaultsAllowed allows patchPodMetadata without a whitelist ConfigMap.
	PatchPodMetadataDefaultsAllowed bool
	// SortSidecarContainersByName places injected sidecar containers in name order (feature gate
	// EnableSortSidecarContainerByName); every SidecarSet is then served by the webhook.
	SortSidecarContainersByName bool
	// RefusePodSecurityViolations refuses a SidecarSet whose sidecars break Pod Security baseline
	// when a namespace it selects enforces baseline or restricted (otherwise a warning).
	RefusePodSecurityViolations bool
	// MaxNamespacedPerNamespace, when positive, caps the NamespacedSidecarSets of one namespace.
	MaxNamespacedPerNamespace int
	// MaxNamespacedBytesPerNamespace, when positive, is the most bytes the NamespacedSidecarSets of
	// one namespace and their revisions may store.
	MaxNamespacedBytesPerNamespace int64
}

// ExtraConfig holds the server's own configuration.
type ExtraConfig struct {
	Settings

	// Certificates, when set, keeps the self-managed certificates every CertificateInterval
	// (--self-managed-certificates), from a post-start hook.
	Certificates        CertificateKeeper
	CertificateInterval time.Duration

	informers   *informerSet // the informers every part of the server reads; see AdmissionInitializers
	storageGate *StorageGate // see Config.ServeWithoutStorage
	intake      *intakeGate  // see Config.Complete and injectionsync.Intake
}

// CertificateKeeper keeps certificates current until ctx ends (certificates.Manager).
type CertificateKeeper interface {
	Run(ctx context.Context, interval time.Duration)
}

// Config is the server configuration.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

// NewConfig returns a configuration whose generic part serves this server's OpenAPI; the
// command line's options are then applied to it.
func NewConfig() *Config {
	cfg := genericapiserver.NewRecommendedConfig(Codecs)
	namer := openapi.NewDefinitionNamer(Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "SidecarSet"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "SidecarSet"
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	return &Config{GenericConfig: cfg}
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
	// main reaches the main cluster (the generic config's ClientConfig); nil without one.
	main *restclient.Config
}

// CompletedConfig is a Config after Complete; only it can build a server.
type CompletedConfig struct {
	*completedConfig
}

// Server is the SidecarSet API server.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	// Revisions is the writable store of SidecarSetRevisions, for the in-process controller.
	Revisions *genericregistry.Store
}

// Complete fills in the fields that are not set, and keeps the server serving injection while
// its storage is down (ServeWithoutStorage). Call it once the options are applied.
func (cfg *Config) Complete() CompletedConfig {
	if cfg.ExtraConfig.storageGate == nil {
		cfg.ServeWithoutStorage()
	}
	if cfg.ExtraConfig.intake == nil {
		cfg.ExtraConfig.intake = &intakeGate{}
	}
	return CompletedConfig{&completedConfig{cfg.GenericConfig.Complete(), &cfg.ExtraConfig, cfg.GenericConfig.ClientConfig}}
}

// New builds the server: the informers, pod injection, the API groups, and the post-start hooks
// that start the informers and, in the leader, the controllers.
func (c completedConfig) New() (*Server, error) {
	set, err := c.ExtraConfig.informerSet(c.GenericConfig.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	paths := &injectionPaths{webhookOnly: c.ExtraConfig.Injection == InjectionWebhook}
	reviewer := newReviewer(c.GenericConfig.SharedInformerFactory, set, c.ExtraConfig.SortSidecarContainersByName, c.ExtraConfig.retiredFor())
	var viewer sidecarsetstorage.RolloutViewer
	if c.GenericConfig.SharedInformerFactory != nil && c.main != nil {
		if err := set.watchPods(c.main, c.GenericConfig.SharedInformerFactory); err != nil {
			return nil, err
		}
		sets := set.own.Apps().V1alpha1().SidecarSets().Lister()
		disco, err := discovery.NewDiscoveryClientForConfig(c.main)
		if err != nil {
			return nil, err
		}
		if set.resizes, err = resize.NewSupport(disco, set.own.Apps().V1alpha1().SidecarSetRevisions().Informer()); err != nil {
			return nil, err
		}
		kube, err := kubernetes.NewForConfig(c.main)
		if err != nil {
			return nil, err
		}
		if set.preDownloads, err = pull.New(kube, c.ExtraConfig.Namespace, nil); err != nil {
			return nil, err
		}
		viewer = view.Rollout{Pods: set.pods, Injection: paths.describe, ExcludedNamespaces: c.ExtraConfig.excludedNamespaces(),
			Resizes: set.resizes, PreDownloads: set.preDownloads,
			SidecarSets: func(name string) *v1alpha1.SidecarSet {
				ss, err := sets.Get(name)
				if err != nil {
					return nil
				}
				return ss
			}}
	}
	s, err := c.install(reviewer, viewer, settleWrites(set.seen, reviewer.HasSynced))
	if err != nil {
		return nil, err
	}
	if err := c.followWrites(s, reviewer, set); err != nil {
		return nil, err
	}
	// Ready once injection can answer: a replica joins the Service only after its first sync
	// (etcd is left out afterwards: the webhook answers from the caches).
	if err := s.GenericAPIServer.AddReadyzChecks(healthz.NamedCheck("sidecarset-injection", func(*http.Request) error {
		if !reviewer.HasSynced() {
			return errors.New("the SidecarSets injection needs are not loaded yet")
		}
		return nil
	})); err != nil {
		return nil, err
	}
	if err := c.addControllerHook(s, set, paths); err != nil {
		return nil, err
	}
	if keeper := c.ExtraConfig.Certificates; keeper != nil {
		interval := c.ExtraConfig.CertificateInterval
		if err := s.GenericAPIServer.AddPostStartHook("sidecarset-certificates", func(hc genericapiserver.PostStartHookContext) error {
			go keeper.Run(hc, interval)
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// followWrites has the webhook wait, before it answers, until this replica's index has taken in
// every SidecarSet write stored through any replica (see keyWrites); nothing to do without etcd.
func (c completedConfig) followWrites(s *Server, reviewer *webhook.Reviewer, set *informerSet) error {
	if c.GenericConfig.RESTOptionsGetter == nil {
		return nil
	}
	storage, prefixes, err := sidecarSetKeys(c.GenericConfig.RESTOptionsGetter)
	if err != nil || len(storage.Transport.ServerList) == 0 {
		return err
	}
	writes, err := newKeyWrites(storage, prefixes)
	if err != nil {
		return err
	}
	seen := set.seen
	reviewer.Fresh = freshness(writes, seen, func() bool { return set.intakeOpen == nil || set.intakeOpen() })
	return s.GenericAPIServer.AddPostStartHook("sidecarset-write-follower", func(hc genericapiserver.PostStartHookContext) error {
		go writes.Run(hc)
		return nil
	})
}

// install builds the generic server and installs both API groups.
func (c completedConfig) install(reviewer sidecarinjection.Reviewer, viewer sidecarsetstorage.RolloutViewer, settle writeSettler) (*Server, error) {
	generic, err := c.GenericConfig.New("sidecarset-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	serveVersion(generic.Handler.GoRestfulContainer)
	s := &Server{GenericAPIServer: generic}
	optsGetter := c.GenericConfig.RESTOptionsGetter
	if s.Revisions, err = sidecarsetrevision.NewStore(Scheme, optsGetter); err != nil {
		return nil, fmt.Errorf("sidecarsetrevisions storage: %w", err)
	}
	sets, err := sidecarsetstorage.NewStorage(Scheme, optsGetter, s.Revisions, viewer, c.GenericConfig.AdmissionControl, c.ExtraConfig.intake)
	if err != nil {
		return nil, fmt.Errorf("sidecarsets storage: %w", err)
	}
	limit, err := c.namespaceCap()
	if err != nil {
		return nil, err
	}
	namespaced, err := sidecarsetstorage.NewNamespacedStorage(Scheme, optsGetter, s.Revisions, viewer, c.GenericConfig.AdmissionControl, c.ExtraConfig.intake,
		sidecarsetstorage.NamespaceLimits{Cap: limit, Bytes: c.ExtraConfig.MaxNamespacedBytesPerNamespace > 0})
	if err != nil {
		return nil, fmt.Errorf("namespacedsidecarsets storage: %w", err)
	}
	settle.hook(sets.SidecarSet.Store, false)
	settle.hook(namespaced.SidecarSet.Store, true)
	if c.ExtraConfig.informers != nil {
		c.ExtraConfig.informers.direct.Store(&directStores{sets: sets.SidecarSet.Store, namespaced: namespaced.SidecarSet.Store, revisions: s.Revisions})
	}

	appsGroup := genericapiserver.NewDefaultAPIGroupInfo(apps.GroupName, Scheme, metav1.ParameterCodec, Codecs)
	appsGroup.NegotiatedSerializer = withoutProtobuf{Codecs}
	appsGroup.VersionedResourcesStorageMap["v1alpha1"] = map[string]rest.Storage{
		"sidecarsets":           sets.SidecarSet,
		"sidecarsets/status":    sets.Status,
		"sidecarsets/revisions": sets.Revisions,
		"sidecarsets/rollout":   sets.Rollout,
		"sidecarsetrevisions":   sidecarsetrevision.NewREST(s.Revisions, sets.SidecarSet),
		// Namespace owners' SidecarSets, v1alpha1 only.
		"namespacedsidecarsets":           namespaced.SidecarSet,
		"namespacedsidecarsets/status":    namespaced.Status,
		"namespacedsidecarsets/revisions": namespaced.Revisions,
		"namespacedsidecarsets/rollout":   namespaced.Rollout,
	}
	// v1beta1 serves the same storage; SidecarSetRevisions stay v1alpha1 only.
	appsGroup.VersionedResourcesStorageMap["v1beta1"] = map[string]rest.Storage{
		"sidecarsets":           sets.SidecarSet,
		"sidecarsets/status":    sets.Status,
		"sidecarsets/revisions": sets.Revisions,
		"sidecarsets/rollout":   sets.Rollout,
	}
	if err := generic.InstallAPIGroup(&appsGroup); err != nil {
		return nil, err
	}

	admissionGroup := genericapiserver.NewDefaultAPIGroupInfo(AdmissionGroupVersion.Group, Scheme, metav1.ParameterCodec, Codecs)
	admissionGroup.NegotiatedSerializer = withoutProtobuf{Codecs}
	admissionGroup.VersionedResourcesStorageMap[AdmissionGroupVersion.Version] = map[string]rest.Storage{
		"sidecarinjections": sidecarinjection.NewREST(reviewer),
	}
	if err := generic.InstallAPIGroup(&admissionGroup); err != nil {
		return nil, err
	}
	if gate := c.ExtraConfig.storageGate; gate != nil {
		generic.AddPostStartHookOrDie("sidecarset-storage-gate", func(hc genericapiserver.PostStartHookContext) error {
			go gate.Run(hc)
			return nil
		})
	}
	return s, nil
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	return s.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// ServeWithoutStorage, called once the generic options are applied, keeps the server live and
// ready while its etcd is down (DecoupleFromStorage) and answers requests for stored resources
// meanwhile with a clear 503 (StorageGate).
func (c *Config) ServeWithoutStorage() {
	etcd := DecoupleFromStorage(&c.GenericConfig.Config)
	if etcd == nil {
		return
	}
	gate := NewStorageGate(etcd, time.Second) // the etcd check probes at most once a second
	c.ExtraConfig.storageGate = gate
	next := c.GenericConfig.BuildHandlerChainFunc
	c.GenericConfig.BuildHandlerChainFunc = func(h http.Handler, gc *genericapiserver.Config) http.Handler {
		return next(gate.Wrap(h), gc)
	}
}
