// Package app is the kubectl-sidecarset command: thin adapters from the command line and the
// cluster to the pure cores (pkg/injection, pkg/explain, the server's /rollout).
package app

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"
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
	exitOK          = 0
	exitError       = 1
	exitCouldNotRun = 2
)

// exitCodeError is an error that exits with a code other than exitError.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string { return e.err.Error() }
func (e *exitCodeError) Unwrap() error { return e.err }

// options are the flags every command shares and the clients built from them.
type options struct {
	// config holds kubectl's connection flags (--kubeconfig, --context, --server, --token, -n ...).
	config *genericclioptions.ConfigFlags
	// printFlags holds -o and the template flags; output is its -o.
	printFlags *genericclioptions.PrintFlags
	output     string
	genericiooptions.IOStreams

	// newClients builds the clients; tests replace it.
	newClients func() (*clients, error)
	// now and rand feed the injector (hash timestamps, the Partial revision policy); tests fix them.
	now  func() time.Time
	rand func() float64
}

// clients reach the cluster: its own API and the SidecarSet API.
type clients struct {
	kube       kubernetes.Interface
	sidecarSet versioned.Interface
	namespace  string // the -n flag or the context's namespace
}

// Main runs the command with args and returns the process exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	cmd := NewCommand(genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut})
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(errOut, "error:", err)
	if e := (*exitCodeError)(nil); errors.As(err, &e) {
		return e.code
	}
	return exitError
}

// NewCommand returns the root command, kubectl-sidecarset, shown as `kubectl sidecarset`.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newRoot(newOptions(streams.In, streams.Out, streams.ErrOut))
}

// Offline is the clock and the randomness of inject and explain (hash timestamps, the Partial
// revision policy): a test comparing them with the server's webhook fixes them (test/parity), as
// it fixes the webhook's.
type Offline struct {
	Now  func() time.Time
	Rand func() float64
}

// NewOfflineCommand returns the root command with the clock and the randomness of off, reaching
// no cluster.
func NewOfflineCommand(streams genericiooptions.IOStreams, off Offline) *cobra.Command {
	o := newOptions(streams.In, streams.Out, streams.ErrOut)
	o.now, o.rand = off.Now, off.Rand
	o.newClients = func() (*clients, error) { return nil, errors.New("no cluster: the command runs offline") }
	return newRoot(o)
}

func newOptions(in io.Reader, out, errOut io.Writer) *options {
	o := &options{config: genericclioptions.NewConfigFlags(true), printFlags: genericclioptions.NewPrintFlags(""),
		IOStreams: genericiooptions.IOStreams{In: in, Out: out, ErrOut: errOut},
		now:       time.Now, rand: rand.Float64}
	o.printFlags.OutputFormat = &o.output
	o.printFlags.WithTypeSetter(scheme.Scheme)
	o.newClients = o.clusterClients
	return o
}

func newRoot(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "kubectl-sidecarset",
		Short:         "Inject, explain, check and roll out SidecarSets and NamespacedSidecarSets (apps.kruise.io)",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl sidecarset"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(o.In)
	cmd.SetOut(o.Out)
	cmd.SetErr(o.ErrOut)
	flags := cmd.PersistentFlags()
	o.config.AddFlags(flags)
	addPrintFlags(flags, o.printFlags)
	registerFlagCompletion(cmd, o)
	cmd.AddCommand(newInjectCommand(o), newExplainCommand(o), newRolloutCommand(o), newVersionCommand(o), newCheckCommand(o), newMigrateCommand(o),
		newCompletionCommand(cmd))
	return cmd
}

func (o *options) clientConfig() clientcmd.ClientConfig {
	return o.config.ToRawKubeConfigLoader()
}

// restConfig is the client configuration of the kubeconfig and flags.
func (o *options) restConfig() (*rest.Config, error) {
	return o.config.ToRESTConfig()
}

// clusterClients builds the clients from the kubeconfig and flags.
func (o *options) clusterClients() (*clients, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := o.clientConfig().Namespace()
	if err != nil {
		return nil, err
	}
	return newClients(cfg, ns)
}

func newClients(cfg *rest.Config, ns string) (*clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ss, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, sidecarSet: ss, namespace: ns}, nil
}

// clusterAPIs are the clients of the cluster's API extensions, aggregation, metadata and dynamic
// APIs beside the usual ones: what check and migrate read of CRDs, APIServices and custom objects.
type clusterAPIs struct {
	*clients
	extensions apiextensionsclient.Interface
	aggregator aggregatorclient.Interface
	metadata   metadata.Interface
	dynamic    dynamic.Interface
}

// clusterAPIs builds the clients of clusterAPIs from the kubeconfig and flags.
func (o *options) clusterAPIs() (*clusterAPIs, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c := &clusterAPIs{}
	if c.clients, err = o.newClients(); err != nil {
		return nil, err
	}
	if c.extensions, err = apiextensionsclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.aggregator, err = aggregatorclient.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if c.metadata, err = metadata.NewForConfig(cfg); err != nil {
		return nil, err
	}
	c.dynamic, err = dynamic.NewForConfig(cfg)
	return c, err
}

// offlineNamespace is the namespace without a cluster: the -n flag, else "default".
func (o *options) offlineNamespace() string {
	if o.config.Namespace != nil && *o.config.Namespace != "" {
		return *o.config.Namespace
	}
	return "default"
}

// errStalled is returned when a rollout makes no progress; it exits with exitError.
var errStalled = errors.New("rollout stalled")
