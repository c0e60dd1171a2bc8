// Package cli is what every command of kubectl-sidecarset shares: the flags of the root command
// and the clients built from them (Options), the exit codes, and the printing of API objects and
// reports with -o. It holds no command; each is a package beside it.
package cli

import (
	"io"
	"math/rand/v2"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"

	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/scheme"
)

// Exit codes, as kubectl's: 0 success, 1 any failure (an error, a stalled or timed out rollout, a
// check that found problems); check exits 2 when it could not run at all.
const (
	ExitOK          = 0
	ExitError       = 1
	ExitCouldNotRun = 2
)

// ExitCodeError is an error that exits with a code other than ExitError.
type ExitCodeError struct {
	Code int
	Err  error
}

func (e *ExitCodeError) Error() string { return e.Err.Error() }
func (e *ExitCodeError) Unwrap() error { return e.Err }

// Options are the flags every command shares and the clients built from them.
type Options struct {
	// Config holds kubectl's connection flags (--kubeconfig, --context, --server, --token, -n ...).
	Config *genericclioptions.ConfigFlags
	// PrintFlags holds -o and the template flags; Output is its -o.
	PrintFlags *genericclioptions.PrintFlags
	Output     string
	genericiooptions.IOStreams

	// NewClients builds the clients; tests replace it.
	NewClients func() (*Clients, error)
	// Now and Rand feed the injector (hash timestamps, the Partial revision policy); tests fix them.
	Now  func() time.Time
	Rand func() float64
}

// Clients reach the cluster: its own API and the SidecarSet API.
type Clients struct {
	Kube       kubernetes.Interface
	SidecarSet versioned.Interface
	Namespace  string // the -n flag or the context's namespace
}

// NewOptions returns the options of a command reading in and writing out and errOut, which
// reaches the cluster of the kubeconfig and flags.
func NewOptions(in io.Reader, out, errOut io.Writer) *Options {
	o := &Options{Config: genericclioptions.NewConfigFlags(true), PrintFlags: genericclioptions.NewPrintFlags(""),
		IOStreams: genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut},
		Now:       time.Now, Rand: rand.Float64}
	o.PrintFlags.OutputFormat = &o.Output
	o.PrintFlags.WithTypeSetter(scheme.Scheme)
	o.NewClients = o.ClusterClients
	return o
}

// ClientConfig is the kubeconfig as the flags select and override it.
func (o *Options) ClientConfig() clientcmd.ClientConfig {
	return o.Config.ToRawKubeConfigLoader()
}

// restConfig is the client configuration of the kubeconfig and flags.
func (o *Options) restConfig() (*rest.Config, error) {
	return o.Config.ToRESTConfig()
}

// ClusterClients builds the clients from the kubeconfig and flags.
func (o *Options) ClusterClients() (*Clients, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.ClientConfig().Namespace()
	if err != nil {
		return nil, err
	}
	return newClients(cfg, ns)
}

func newClients(cfg *rest.Config, ns string) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ss, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Kube: kube, SidecarSet: ss, Namespace: ns}, nil
}

// ClusterAPIs are the clients of the cluster's API extensions, aggregation, metadata and dynamic
// APIs beside the usual ones: what check and migrate read of CRDs, APIServices and custom objects.
type ClusterAPIs struct {
	*Clients
	Extensions apiextensionsclient.Interface
	Aggregator aggregatorclient.Interface
	Metadata   metadata.Interface
	Dynamic    dynamic.Interface
}

// ClusterAPIs builds the clients of ClusterAPIs from the kubeconfig and flags.
func (o *Options) ClusterAPIs() (*ClusterAPIs, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c := &ClusterAPIs{}
	if c.Clients, err = o.NewClients(); err != nil {
		return nil, err
	}
	if c.Extensions, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Aggregator, err = aggregatorclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	c.Dynamic, err = dynamic.NewForConfig(cfg)
	return c, err
}

// OfflineNamespace is the namespace without a cluster: the -n flag, else "default".
func (o *Options) OfflineNamespace() string {
	if o.Config.Namespace != nil && *o.Config.Namespace != "" {
		return *o.Config.Namespace
	}
	return "default"
}
