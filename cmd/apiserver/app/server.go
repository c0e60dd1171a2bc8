package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/admission/injection"
	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/admission/webhook"

	"github.com/sidecarset/apiserver/pkg/admission/plugin/crossvalidation"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apiserver"
	policyctrl "github.com/sidecarset/apiserver/pkg/controller/policy"
	controller "github.com/sidecarset/apiserver/pkg/controller/sidecarset"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	informers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions"
)

// NewCommand returns the cobra command running the server until ctx ends.
func NewCommand(ctx context.Context) *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "sidecarset-apiserver",
		Short: "Serve the apps.kruise.io SidecarSet API, inject sidecars into pods and upgrade them in place",
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	cmd.SetContext(ctx)
	o.AddFlags(cmd.Flags())
	return cmd
}

// informerSet holds the informer factories the server starts after it listens.
type informerSet struct {
	own        informers.SharedInformerFactory
	configMaps kubeinformers.SharedInformerFactory
	// podInformers watches the main cluster's pods over protobuf; pods is what the controller keeps
	// of them, with the namespaces of the generic server's factory. Both nil without a main cluster.
	podInformers kubeinformers.SharedInformerFactory
	pods         *controller.PodSource
	// index is the injection index of the SidecarSets, shared by the webhook and the controller.
	index *injection.Index
}

// ensureOwn creates the informer factory of the server's own API on the loopback client.
func (s *informerSet) ensureOwn(loopback *rest.Config) error {
	if s.own != nil {
		return nil
	}
	client, err := clientset.NewForConfig(loopback)
	if err != nil {
		return err
	}
	s.own = informers.NewSharedInformerFactory(client, 0)
	return nil
}

func (s *informerSet) start(stop <-chan struct{}) {
	s.own.Start(stop)
	if s.configMaps != nil {
		s.configMaps.Start(stop)
	}
	if s.podInformers != nil {
		s.podInformers.Start(stop)
	}
}

// Config turns the options into a server configuration.
func (o *Options) Config() (*apiserver.Config, *informerSet, error) {
	dns, ips := o.certificateNames()
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", dns, ips); err != nil {
		return nil, nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	set := &informerSet{}
	o.RecommendedOptions.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
		inputs, err := o.admissionInputs(c, set)
		if err != nil {
			return nil, err
		}
		return []admission.PluginInitializer{crossvalidation.Initializer{Inputs: inputs}}, nil
	}

	cfg := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	namer := openapi.NewDefinitionNamer(apiserver.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(apiserver.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "SidecarSet"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(apiserver.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "SidecarSet"
	cfg.EffectiveVersion = compatibility.DefaultBuildEffectiveVersion()
	if err := o.RecommendedOptions.ApplyTo(cfg); err != nil {
		return nil, nil, err
	}
	if err := set.ensureOwn(cfg.LoopbackClientConfig); err != nil {
		return nil, nil, err
	}
	extra := apiserver.ExtraConfig{Reviewer: newReviewer(cfg, set)}
	if cfg.SharedInformerFactory != nil && cfg.ClientConfig != nil {
		if err := set.watchPods(cfg.ClientConfig, cfg.SharedInformerFactory); err != nil {
			return nil, nil, err
		}
		extra.RolloutViewer = controller.Viewer{Pods: set.pods, Injection: o.describeInjection(set)}
	}
	out := &apiserver.Config{GenericConfig: cfg, ExtraConfig: extra}
	out.ServeWithoutStorage()
	return out, set, nil
}

// describeInjection says, for the /rollout view, which path injects a SidecarSet in this server's
// mode.
func (o *Options) describeInjection(set *informerSet) func(*v1alpha1.SidecarSet) *v1alpha1.RolloutInjection {
	lister := set.own.Apps().V1alpha1().SidecarSets().Lister()
	return func(ss *v1alpha1.SidecarSet) *v1alpha1.RolloutInjection {
		all, err := lister.List(labels.Everything())
		if err != nil {
			return &v1alpha1.RolloutInjection{Path: string(policy.PathWebhook), Reason: "Unknown", Message: err.Error()}
		}
		if o.policiesUnserved {
			return &v1alpha1.RolloutInjection{Path: string(policy.PathWebhook), Reason: "PoliciesNotServed",
				Message: "the cluster serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy"}
		}
		return policy.Describe(ss, all, o.Injection == InjectionWebhook)
	}
}

// watchPods sets up the main cluster's pod informer, keeping only what the controller reads of
// each pod. Pods are decoded from protobuf: a burst of pod events then costs a fraction of the
// garbage and CPU of JSON. start starts it once the server listens.
func (s *informerSet) watchPods(main *rest.Config, generic kubeinformers.SharedInformerFactory) error {
	cfg := rest.CopyConfig(main)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	s.podInformers = kubeinformers.NewSharedInformerFactory(kube, 0)
	s.pods, err = controller.NewPodSource(s.podInformers.Core().V1().Pods(), generic.Core().V1().Namespaces())
	return err
}

// newReviewer builds pod injection on the SidecarSet informer, the revision lister and, when the
// server knows the main cluster, its namespace lister.
func newReviewer(cfg *genericapiserver.RecommendedConfig, set *informerSet) *webhook.Reviewer {
	index := injection.NewIndex()
	set.index = index
	sets := set.own.Apps().V1alpha1().SidecarSets().Informer()
	if _, err := sets.AddEventHandler(webhook.IndexHandler(index)); err != nil {
		panic(err) // only fails on a stopped informer, which cannot be the case before start
	}
	revs := set.own.Apps().V1alpha1().SidecarSetRevisions()
	synced := []cache.InformerSynced{sets.HasSynced, revs.Informer().HasSynced}
	namespaces := corelisters.NewNamespaceLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}))
	if cfg.SharedInformerFactory != nil {
		ns := cfg.SharedInformerFactory.Core().V1().Namespaces()
		namespaces = ns.Lister()
		synced = append(synced, ns.Informer().HasSynced)
	}
	return &webhook.Reviewer{
		Index:      index,
		Namespaces: namespaces,
		Revisions:  revs.Lister(),
		Clock:      clock.RealClock{},
		Rand:       rand.Float64,
		// A SidecarSet already injected in this admission (by its policy, or by this webhook
		// before a reinvocation) is left as it is.
		Options: injection.Options{SkipInjected: true},
		HasSynced: func() bool {
			for _, s := range synced {
				if !s() {
					return false
				}
			}
			return true
		},
	}
}

// admissionInputs builds the informers the SidecarSet admission plugin reads.
func (o *Options) admissionInputs(c *genericapiserver.RecommendedConfig, set *informerSet) (crossvalidation.Inputs, error) {
	if err := set.ensureOwn(c.LoopbackClientConfig); err != nil {
		return crossvalidation.Inputs{}, err
	}
	sets := set.own.Apps().V1alpha1().SidecarSets()
	revs := set.own.Apps().V1alpha1().SidecarSetRevisions()
	inputs := crossvalidation.Inputs{
		SidecarSets:                     sets.Lister(),
		Revisions:                       revs.Lister(),
		Whitelist:                       func() (*string, error) { return nil, nil },
		PatchPodMetadataDefaultsAllowed: utilfeature.DefaultFeatureGate.Enabled(PatchPodMetadataDefaultsAllowed),
	}
	synced := []func() bool{sets.Informer().HasSynced, revs.Informer().HasSynced}
	if c.ClientConfig != nil {
		cms := o.whitelistInformers(c.ClientConfig)
		set.configMaps = cms
		inf := cms.Core().V1().ConfigMaps()
		inputs.Whitelist = crossvalidation.WhitelistFrom(inf.Lister().ConfigMaps(o.Namespace))
		synced = append(synced, inf.Informer().HasSynced)
	}
	inputs.HasSynced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
	return inputs, nil
}

// whitelistInformers watches only the whitelist ConfigMap of the main cluster.
func (o *Options) whitelistInformers(cfg *rest.Config) kubeinformers.SharedInformerFactory {
	kube := kubernetes.NewForConfigOrDie(cfg)
	return kubeinformers.NewSharedInformerFactoryWithOptions(kube, 10*time.Minute,
		kubeinformers.WithNamespace(o.Namespace),
		kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", crossvalidation.WhitelistConfigMap).String()
		}))
}

// Run runs the server until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	cfg, set, err := o.Config()
	if err != nil {
		return err
	}
	server, err := cfg.Complete().New()
	if err != nil {
		return err
	}
	if err := o.AddPostStartHooks(server, cfg, set); err != nil {
		return err
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}

// AddPostStartHooks registers the hook that starts the server's informers and its controller
// once it listens. With --leader-elect and a main cluster, only the replica holding the Lease
// "sidecarset-controller" in --namespace runs the controller; every replica serves the API.
func (o *Options) AddPostStartHooks(server *apiserver.Server, cfg *apiserver.Config, set *informerSet) error {
	client, err := clientset.NewForConfig(cfg.GenericConfig.LoopbackClientConfig)
	if err != nil {
		return err
	}
	main := cfg.GenericConfig.ClientConfig
	opts := controller.Options{
		Client:      client,
		SidecarSets: set.own.Apps().V1alpha1().SidecarSets(),
		Revisions:   set.own.Apps().V1alpha1().SidecarSetRevisions(),
		Writer:      apiserver.RevisionWriter{Store: server.Revisions},
	}
	var events record.EventBroadcaster
	if main != nil && set.pods != nil {
		kubeCfg := rest.CopyConfig(main)
		kubeCfg.QPS, kubeCfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst
		kubeCfg.ContentType = runtime.ContentTypeProtobuf // pods are read and written whole
		kubeCfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		opts.Kube = kubernetes.NewForConfigOrDie(kubeCfg)
		opts.Pods = set.pods
		events = record.NewBroadcaster()
		opts.Recorder = events.NewRecorder(eventScheme(), corev1.EventSource{Component: "sidecarset-controller"})
	}
	policies, startPolicyInformers, err := o.policyController(main, set)
	if err != nil {
		return err
	}
	if policies != nil {
		opts.InjectionReady = policies.Ready
		opts.Injection = o.describeInjection(set)
		opts.ExcludedNamespaces = append(append([]string(nil), o.ExcludedNamespaces...), o.Namespace)
		if set.index != nil {
			opts.Candidates = set.index.Candidates
		}
	}
	ctrl, err := controller.New(opts)
	if err != nil {
		return err
	}
	return server.GenericAPIServer.AddPostStartHook("start-sidecarset-controller", func(hc genericapiserver.PostStartHookContext) error {
		set.start(hc.Done())
		if policies != nil {
			startPolicyInformers(hc.Done())
		}
		if events != nil {
			events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: opts.Kube.CoreV1().Events("")})
			go func() { <-hc.Done(); events.Shutdown() }()
		}
		run := func(ctx context.Context) {
			if policies != nil {
				go policies.Run(ctx)
			}
			ctrl.Run(ctx, o.Workers)
		}
		if !o.LeaderElect || main == nil {
			go run(hc)
			return nil
		}
		go o.runElected(hc, main, run)
		return nil
	})
}

// policyController builds the controller that owns the injection policies in the main cluster,
// with its informers (started by the returned function). In webhook mode it removes what policy
// mode left and keeps the webhook's match condition to the SidecarSets' selectors; it is nil without a main cluster, or where the cluster serves no
// admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (the webhook then injects everything).
func (o *Options) policyController(main *rest.Config, set *informerSet) (*policyctrl.Controller, func(<-chan struct{}), error) {
	if main == nil {
		return nil, nil, nil
	}
	cfg := rest.CopyConfig(main)
	cfg.QPS, cfg.Burst = o.KubeAPIQPS, o.KubeAPIBurst // a plan may write a thousand policies
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if !servesMutatingAdmissionPolicies(kube) {
		o.policiesUnserved = true
		klog.InfoS("the cluster serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: the webhook injects every SidecarSet")
		return nil, nil, nil
	}
	owned := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = policy.ManagedByLabel + "=" + policy.ManagedByValue
	}))
	webhooks := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.FieldSelector = fields.OneTermEqualSelector("metadata.name", o.WebhookConfiguration).String()
	}))
	ctrl, err := policyctrl.New(policyctrl.Options{
		Kube:                 kube,
		SidecarSets:          set.own.Apps().V1alpha1().SidecarSets(),
		Policies:             owned.Admissionregistration().V1().MutatingAdmissionPolicies(),
		Bindings:             owned.Admissionregistration().V1().MutatingAdmissionPolicyBindings(),
		Webhooks:             webhooks.Admissionregistration().V1().MutatingWebhookConfigurations(),
		WebhookConfiguration: o.WebhookConfiguration,
		ExcludedNamespaces:   append(append([]string(nil), o.ExcludedNamespaces...), o.Namespace),
		Resync:               5 * time.Minute,
		Grace:                o.PolicyGrace,
		WebhookOnly:          o.Injection == InjectionWebhook,
	})
	if err != nil {
		return nil, nil, err
	}
	return ctrl, func(stop <-chan struct{}) { owned.Start(stop); webhooks.Start(stop) }, nil
}

// servesMutatingAdmissionPolicies reports whether discovery lists v1 mutatingadmissionpolicies.
func servesMutatingAdmissionPolicies(kube kubernetes.Interface) bool {
	list, err := kube.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		klog.ErrorS(err, "discovering admissionregistration.k8s.io/v1")
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == "mutatingadmissionpolicies" {
			return true
		}
	}
	return false
}

// eventScheme knows the objects the controller records events on: pods and SidecarSets.
func eventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// runElected runs fn while this replica holds the controller Lease, for as many terms as it wins
// until ctx ends. A replica that loses the Lease (its renewals failed for RenewDeadline) stops its
// term (fn's context ends, cancelling its requests), keeps serving the API and runs for the Lease
// again.
func (o *Options) runElected(ctx context.Context, main *rest.Config, fn func(context.Context)) {
	host, err := os.Hostname()
	if err != nil {
		klog.ErrorS(err, "hostname for the leader election identity")
	}
	id := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, leaseName,
		nil, kubernetes.NewForConfigOrDie(main).CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil { // only for an unknown lock type
		klog.ErrorS(err, "creating the controller lock")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	config := leaderelection.LeaderElectionConfig{
		Name: leaseName, Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 2 * time.Second, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: fn,
			OnStoppedLeading: func() { klog.InfoS("stopped leading", "lease", leaseName) },
		},
	}
	for {
		klog.InfoS("running for the controller lease", "lease", klog.KRef(o.Namespace, leaseName), "identity", id)
		leaderelection.RunOrDie(ctx, config)
		if ctx.Err() != nil {
			return
		}
		klog.InfoS("lost the controller lease; running for it again", "lease", leaseName, "identity", id)
	}
}

// leaseName is the controller Lease in --namespace.
const leaseName = "sidecarset-controller"
