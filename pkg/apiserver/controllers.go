package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
	controller "github.com/sidecarset/apiserver/pkg/controller/sidecarset"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/condition"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/version"
)

// injectionPaths says, for the /rollout view and the SidecarSet status, which admission path
// injects a SidecarSet in this server's mode.
type injectionPaths struct {
	webhookOnly bool
	// unserved is set, before the server starts, when the cluster serves no v1
	// MutatingAdmissionPolicy.
	unserved bool
	// planned, set before the server starts, returns the path the policy controller's last plan
	// gave a SidecarSet while this replica leads: the answer, where there is one.
	planned func(name string) (*v1alpha1.RolloutInjection, bool)
}

// describe says which path injects ss as the leader decided it: from its plan on the leader,
// from the Injected condition the leader recorded for ss's generation on another replica (or
// before the leader's first plan); only the leader decides.
func (p *injectionPaths) describe(ss *v1alpha1.SidecarSet) *v1alpha1.RolloutInjection {
	if p.unserved {
		return &v1alpha1.RolloutInjection{Path: string(apps.PathWebhook), Reason: "PoliciesNotServed",
			Message: "the cluster serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy"}
	}
	if p.planned != nil {
		if inj, ok := p.planned(ss.Name); ok {
			return inj
		}
	}
	if inj, ok := condition.InjectionFrom(ss); ok {
		return inj
	}
	return &v1alpha1.RolloutInjection{Path: string(apps.PathWebhook), Reason: "NotPlanned", Message: fmt.Sprintf(
		"the leader has not yet planned generation %d; until a policy for it is loaded, the injection webhook injects it", ss.Generation)}
}

// addControllerHook registers the hook that starts the server's informers and its controllers
// once it listens. With LeaderElect and a main cluster, only the replica holding the Lease
// "sidecarset-controller" in Namespace runs the controllers; every replica serves the API.
func (c completedConfig) addControllerHook(s *Server, set *informerSet, paths *injectionPaths) error {
	client, err := clientset.NewForConfig(c.GenericConfig.LoopbackClientConfig)
	if err != nil {
		return err
	}
	opts := controller.Options{
		Client:      client,
		SidecarSets: set.own.Apps().V1alpha1().SidecarSets(),
		Revisions:   set.own.Apps().V1alpha1().SidecarSetRevisions(),
		Writer:      RevisionWriter{Store: s.Revisions},
		// Pods there are never injected: they are reported as such, never evicted to be.
		ExcludedNamespaces: c.ExtraConfig.excludedNamespaces(),
	}
	var events record.EventBroadcaster
	if c.main != nil && set.pods != nil {
		kubeCfg := protobuf(c.main) // pods are read and written whole
		kubeCfg.QPS, kubeCfg.Burst = c.ExtraConfig.KubeAPIQPS, c.ExtraConfig.KubeAPIBurst
		if opts.Kube, err = kubernetes.NewForConfig(kubeCfg); err != nil {
			return err
		}
		opts.Pods = set.pods
		opts.Resizes = set.resizes
		opts.PreDownloads = set.preDownloads
		events = record.NewBroadcaster()
		opts.Recorder = events.NewRecorder(eventScheme(), corev1.EventSource{Component: "sidecarset-controller"})
	}
	policies, startPolicyInformers, err := c.policyController(set, paths)
	if err != nil {
		return err
	}
	if policies != nil {
		paths.planned = policies.Injection
		opts.InjectionReady = policies.Ready
		opts.InjectionPlanned = policies.Planned
		opts.Injection = paths.describe
		opts.Widened = policies.Widened
		opts.Candidates = set.index.Candidates
	}
	ctrl, err := controller.New(opts)
	if err != nil {
		return err
	}
	if policies != nil {
		policies.OnChange(ctrl.Resync)
	}
	return s.GenericAPIServer.AddPostStartHook("start-sidecarset-controller", func(hc genericapiserver.PostStartHookContext) error {
		set.start(hc.Done())
		if policies != nil {
			startPolicyInformers(hc.Done())
		}
		if events != nil {
			events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: opts.Kube.CoreV1().Events("")})
			go func() { <-hc.Done(); events.Shutdown() }()
		}
		run := func(ctx context.Context) { // returns once both controllers of the term stopped
			var term sync.WaitGroup
			if policies != nil {
				term.Add(1)
				go func() { defer term.Done(); policies.Run(ctx) }()
			}
			ctrl.Run(ctx, c.ExtraConfig.Workers)
			term.Wait()
		}
		if !c.ExtraConfig.LeaderElect || c.main == nil {
			go run(hc)
			return nil
		}
		go runElected(hc, c.ExtraConfig.Namespace, c.main, run)
		return nil
	})
}

// excludedNamespaces are the namespaces policies never inject: the configured ones and the
// server's own.
func (c *ExtraConfig) excludedNamespaces() []string {
	return append(append([]string(nil), c.ExcludedNamespaces...), c.Namespace)
}

// retiredFor is how long the webhook keeps the versions of SidecarSets replaced or deleted: as
// long as kube-apiserver may still run a policy compiled from one of them (a policy that stops
// injecting a SidecarSet waits until the webhooks that take it over have been in place for the
// grace period, which further writes that change them put off, then kube-apiserver loads its
// change within as much), with room for a busy leader: 2 minutes, or 3 times the grace period and
// the load delay when longer.
func (c *ExtraConfig) retiredFor() time.Duration {
	return max(2*time.Minute, 3*(c.PolicyGrace+c.WebhookLoadDelay))
}

// policyController builds the controller that owns the injection policies in the main cluster,
// with its informers (started by the returned function). In webhook mode it removes what policy
// mode left and keeps the webhook's match condition to the SidecarSets' selectors; it is nil
// without a main cluster, or where the cluster serves no admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy (the webhook then injects everything).
func (c completedConfig) policyController(set *informerSet, paths *injectionPaths) (*injectionsync.Controller, func(<-chan struct{}), error) {
	if c.main == nil {
		return nil, nil, nil
	}
	cfg := rest.CopyConfig(c.main)
	cfg.QPS, cfg.Burst = c.ExtraConfig.KubeAPIQPS, c.ExtraConfig.KubeAPIBurst // a plan may write a thousand policies
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	// The template, the active and the intake configurations (injectionsync.ActiveWebhooks,
	// IntakeWebhooks); a cluster has few.
	webhooks := kubeinformers.NewSharedInformerFactory(kube, 0)
	opts := injectionsync.Options{
		Kube:                 kube,
		SidecarSets:          set.own.Apps().V1alpha1().SidecarSets(),
		Webhooks:             webhooks.Admissionregistration().V1().MutatingWebhookConfigurations(),
		WebhookConfiguration: c.ExtraConfig.WebhookConfiguration,
		ExcludedNamespaces:   c.ExtraConfig.excludedNamespaces(),
		Resync:               5 * time.Minute,
		Grace:                c.ExtraConfig.PolicyGrace,
		MaxPolicyRequests:    c.ExtraConfig.MaxPolicyRequests,
		LoadDelay:            c.ExtraConfig.WebhookLoadDelay,
		WebhookOnly:          paths.webhookOnly,
		Owner:                apiServiceOwner(kube, c.ExtraConfig.InjectionOwner),
		Version:              version.Get().GitVersion,

		SortSidecarContainersByName: c.ExtraConfig.SortSidecarContainersByName,
	}
	owned := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTweakListOptions(func(lo *metav1.ListOptions) {
		lo.LabelSelector = apps.ManagedByLabel + "=" + apps.ManagedByValue
	}))
	if servesMutatingAdmissionPolicies(kube) {
		opts.Policies = owned.Admissionregistration().V1().MutatingAdmissionPolicies()
		opts.Bindings = owned.Admissionregistration().V1().MutatingAdmissionPolicyBindings()
	} else {
		// The webhook injects every SidecarSet; the controller still writes its selection (the
		// shipped webhooks select no pod until it does).
		paths.unserved = true
		opts.WebhookOnly = true
		klog.InfoS("the cluster serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: the webhook injects every SidecarSet")
	}
	ctrl, err := injectionsync.New(opts)
	if err != nil {
		return nil, nil, err
	}
	if opts.WebhookConfiguration != "" {
		inf := opts.Webhooks
		set.intakeOpen = intakeInPlace(inf.Lister(), inf.Informer().HasSynced,
			injectionsync.IntakeWebhooks(opts.WebhookConfiguration), injectionsync.ActiveWebhooks(opts.WebhookConfiguration))
	}
	if c.ExtraConfig.intake != nil {
		c.ExtraConfig.intake.Set(&injectionsync.Intake{Kube: kube, Template: opts.WebhookConfiguration,
			ExcludedNamespaces: opts.ExcludedNamespaces, Hold: intakeHold, LoadDelay: opts.LoadDelay, Owner: opts.Owner})
	}
	return ctrl, func(stop <-chan struct{}) { owned.Start(stop); webhooks.Start(stop) }, nil
}

// intakeHold is how long one SidecarSet write keeps every pod going to the server (see
// injectionsync.Intake): writes within half of it of the last one do not write the webhooks.
const intakeHold = 10 * time.Second

// apiServiceOwner returns a function that reads the owner reference of the APIService name (the
// policies and bindings are garbage-collected with it), nil without a name.
func apiServiceOwner(kube kubernetes.Interface, name string) func(context.Context) (*metav1.OwnerReference, error) {
	if name == "" {
		return nil
	}
	return func(ctx context.Context) (*metav1.OwnerReference, error) {
		raw, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", name).DoRaw(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading APIService %s, the owner of the injection policies: %w", name, err)
		}
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		return &metav1.OwnerReference{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService", Name: obj.Name, UID: obj.UID}, nil
	}
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
