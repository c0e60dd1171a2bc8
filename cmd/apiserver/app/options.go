// Package app holds the command line of the SidecarSet API server: its options, which become a
// pkg/apiserver Config, and the command that completes that Config and runs the server.
package app

import (
	"fmt"
	"math"
	"net"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	netutils "k8s.io/utils/net"

	"github.com/sidecarset/apiserver/pkg/apiserver"
)

// PatchPodMetadataDefaultsAllowed allows patchPodMetadata without a whitelist ConfigMap.
const PatchPodMetadataDefaultsAllowed featuregate.Feature = "SidecarSetPatchPodMetadataDefaultsAllowed"

// SortSidecarContainerByName places injected sidecar containers in name order, OpenKruise's
// feature gate of the same name (alpha, off by default there too).
const SortSidecarContainerByName featuregate.Feature = "EnableSortSidecarContainerByName"

const (
	etcdPathPrefix = "/registry/apps.kruise.io"
	// ServiceName is the Service the APIServices point at; the serving certificate is valid for it.
	ServiceName = "sidecarset-apiserver"
)

// Options are the server's command line options: the generic server's, and the settings of
// pkg/apiserver with the names of its serving certificate.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions
	apiserver.Settings
	// AlternateDNS are extra names of the self-signed serving certificate.
	AlternateDNS []string
	// SelfManagedCertificates has the server keep the installation's certificates in Secrets of
	// --namespace (certificates.source=self-managed) and serve from the files it writes them to.
	SelfManagedCertificates bool
	Certificates            CertificateOptions
	// ServingCAFile is the serving certificate's CA, read for its expiry metric only.
	ServingCAFile string
}

// NewOptions returns the default options.
func NewOptions() *Options {
	o := &Options{
		RecommendedOptions: apiserver.NewRecommendedOptions(etcdPathPrefix),
		Settings: apiserver.Settings{
			Namespace:            "sidecarset-system",
			LeaderElect:          true,
			Workers:              3,
			KubeAPIQPS:           100,
			KubeAPIBurst:         300, // a round of 100 in-place upgrades: read, update and condition of each pod
			Injection:            apiserver.InjectionPolicy,
			WebhookConfiguration: "sidecarset-injector",
			InjectionOwner:       "v1alpha1.apps.kruise.io",
			PolicyGrace:          10 * time.Second,
			WebhookLoadDelay:     time.Second,
			// A granted platform-wide SidecarSet's policy names the sidecars of all its
			// neighbours: kube-apiserver evaluates it for every pod with its label key.
			MaxPolicyRequests: 16,
			// A namespace's NamespacedSidecarSets are planned together; a ResourceQuota can set less.
			MaxNamespacedPerNamespace: 200,
			// 16Mi: the count cap's 200 objects of the manual's size (about 2.3 KiB as stored) with
			// ten revisions each (about 1.2 KiB) store about 2.7 MiB, so this leaves six times that
			// for larger sidecars, and one namespace's worst case drops from 250 MiB to about 18 MiB
			// (the budget and what can still pass it: docs/tenancy.md).
			MaxNamespacedBytesPerNamespace: 16 << 20,
		},
		Certificates: newCertificateOptions(time.Minute, defaultAPIServices),
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		o.Namespace = ns
	}
	return o
}

func init() {
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		PatchPodMetadataDefaultsAllowed: {Default: false, PreRelease: featuregate.Alpha},
		SortSidecarContainerByName:      {Default: false, PreRelease: featuregate.Alpha},
	}))
}

// AddFlags adds the options' flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.RecommendedOptions.AddFlags(fs)
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"Namespace of the server: holds the kruise-configuration whitelist ConfigMap and the leader election Lease.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Run the controller in one replica only, chosen through a Lease in --namespace.")
	fs.StringSliceVar(&o.AlternateDNS, "alternate-dns", o.AlternateDNS,
		"Extra DNS names of the self-signed serving certificate.")
	fs.BoolVar(&o.SelfManagedCertificates, "self-managed-certificates", o.SelfManagedCertificates,
		"Keep the installation's CAs and certificates in Secrets of --namespace (create them when missing, renew them when due: "+
			"the --certificates-* flags), write the serving and etcd client certificates to --tls-cert-file, --tls-private-key-file, "+
			"--serving-ca-file, --etcd-certfile, --etcd-keyfile and --etcd-cafile (the server serves a renewed one at once), and keep "+
			"the caBundle of --certificates-apiservices.")
	o.Certificates.addFlags(fs, "certificates-")
	fs.StringVar(&o.ServingCAFile, "serving-ca-file", o.ServingCAFile,
		"The serving certificate's CA (PEM): read for sidecarset_certificate_expiration_timestamp_seconds{certificate=\"serving-ca\"}, written with --self-managed-certificates.")
	fs.IntVar(&o.Workers, "sidecarset-workers", o.Workers, "Number of SidecarSets the controller reconciles at once.")
	fs.StringVar(&o.Injection, "injection", o.Injection,
		"How pods are injected: policy (each SidecarSet a policy can express becomes a MutatingAdmissionPolicy evaluated inside kube-apiserver; "+
			"the webhook serves the rest and receives only their pods; falls back to webhook where the cluster does not serve admissionregistration.k8s.io/v1 "+
			"MutatingAdmissionPolicy) or webhook (the webhook injects every SidecarSet).")
	fs.StringVar(&o.WebhookConfiguration, "webhook-configuration", o.WebhookConfiguration,
		"MutatingWebhookConfiguration that is the template of the injection webhooks (as shipped it selects no pod); the server writes them into its own configuration, <name>-active, each made one per label key the SidecarSets require, with objectSelectors and match conditions (empty: no webhooks are written).")
	fs.StringVar(&o.InjectionOwner, "injection-owner", o.InjectionOwner,
		"APIService that owns the MutatingAdmissionPolicies and bindings the server writes: deleting it (kubectl delete -k of the deployment) has the garbage collector delete them (empty: no owner).")
	fs.StringSliceVar(&o.ExcludedNamespaces, "injection-excluded-namespaces", o.ExcludedNamespaces,
		"Namespaces whose pods policies never inject, besides --namespace (keep in step with the webhooks' namespaceSelectors; kube-system is injected, as by OpenKruise).")
	fs.DurationVar(&o.PolicyGrace, "policy-grace", o.PolicyGrace,
		"How long the webhook keeps injecting a SidecarSet after its policy was created or changed: kube-apiserver loads policies asynchronously (about every second).")
	fs.IntVar(&o.MaxPolicyRequests, "max-policy-path-requests", o.MaxPolicyRequests,
		"Most SidecarSets asking for the policy path (annotation apps.kruise.io/injection-path: Policy), the oldest first, that get policies before the others and whatever the number of SidecarSets sharing their pods, "+
			"so that their pods are injected while the server is down (0: none).")
	fs.DurationVar(&o.WebhookLoadDelay, "webhook-load-delay", o.WebhookLoadDelay,
		"How long kube-apiserver may take to load a write of the injection webhooks' configuration: the first SidecarSet write of a burst waits this long for the webhooks that send every pod to the server (0: no wait).")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS,
		"Queries per second the controller may send to the main cluster (pod upgrades, events).")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst,
		"Burst of requests the controller may send to the main cluster; upgrading a pod in place takes up to three.")
	fs.BoolVar(&o.RefusePodSecurityViolations, "refuse-pod-security-violations", o.RefusePodSecurityViolations,
		"Refuse a SidecarSet whose sidecars break the Pod Security Standard baseline when a namespace it selects enforces baseline or restricted (their pods would be refused after injection); otherwise the write gets a warning naming those namespaces.")
	fs.IntVar(&o.MaxNamespacedPerNamespace, "max-namespaced-sidecarsets-per-namespace", o.MaxNamespacedPerNamespace,
		"Most NamespacedSidecarSets one namespace may hold; a create beyond it is refused (0: no limit). A namespace's ResourceQuota (count/namespacedsidecarsets.apps.kruise.io) can set less.")
	fs.Var(&byteQuantity{&o.MaxNamespacedBytesPerNamespace}, "max-namespaced-bytes-per-namespace",
		"Most bytes the NamespacedSidecarSets of one namespace and their revisions may store, as stored (JSON), a quantity such as 16Mi or a number of bytes; "+
			"a create or update that would take the namespace past it, and grows it, is refused (0: no limit).")
}

// byteQuantity is a flag holding a number of bytes, written as a quantity (16Mi, 500k) or a number.
type byteQuantity struct{ bytes *int64 }

func (b *byteQuantity) String() string {
	return resource.NewQuantity(*b.bytes, resource.BinarySI).String()
}

func (b *byteQuantity) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n := q.Value() // whole bytes, a fraction rounded up
	if n == math.MaxInt64 || n == math.MinInt64 {
		return fmt.Errorf("%s is too large", s)
	}
	*b.bytes = n
	return nil
}

func (b *byteQuantity) Type() string { return "quantity" }

// Validate checks the options.
func (o *Options) Validate() error {
	errs := o.RecommendedOptions.Validate()
	if o.Namespace == "" {
		errs = append(errs, fmt.Errorf("--namespace is required"))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--sidecarset-workers must be at least 1"))
	}
	if o.MaxNamespacedPerNamespace < 0 {
		errs = append(errs, fmt.Errorf("--max-namespaced-sidecarsets-per-namespace must not be negative"))
	}
	if o.MaxNamespacedBytesPerNamespace < 0 {
		errs = append(errs, fmt.Errorf("--max-namespaced-bytes-per-namespace must not be negative"))
	}
	if o.MaxPolicyRequests < 0 {
		errs = append(errs, fmt.Errorf("--max-policy-path-requests must not be negative"))
	}
	if o.PolicyGrace < 0 {
		errs = append(errs, fmt.Errorf("--policy-grace must not be negative"))
	}
	if o.WebhookLoadDelay < 0 {
		errs = append(errs, fmt.Errorf("--webhook-load-delay must not be negative"))
	}
	if o.Injection != apiserver.InjectionPolicy && o.Injection != apiserver.InjectionWebhook {
		errs = append(errs, fmt.Errorf("--injection must be %q or %q, not %q", apiserver.InjectionPolicy, apiserver.InjectionWebhook, o.Injection))
	}
	if o.SelfManagedCertificates {
		errs = append(errs, o.Certificates.validate("certificates-", time.Second)...)
		if o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile == "" || o.RecommendedOptions.SecureServing.ServerCert.CertKey.KeyFile == "" {
			errs = append(errs, fmt.Errorf("--self-managed-certificates needs --tls-cert-file and --tls-private-key-file (where the serving certificate is written)"))
		}
	}
	if o.KubeAPIQPS <= 0 || o.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-qps and --kube-api-burst must be positive"))
	}
	return utilerrors.NewAggregate(errs)
}

// certificateNames are the names the self-signed serving certificate is valid for.
func (o *Options) certificateNames() ([]string, []net.IP) {
	dns := append([]string{ServiceName + "." + o.Namespace + ".svc"}, o.AlternateDNS...)
	return dns, []net.IP{netutils.ParseIPSloppy("127.0.0.1")}
}
