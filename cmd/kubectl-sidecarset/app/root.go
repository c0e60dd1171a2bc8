// Package app is the kubectl-sidecarset command: thin adapters from the command line and the
// cluster to the pure cores (pkg/admission/injection, pkg/explain, the server's /rollout).
package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
)

// Exit codes, as kubectl's: 0 success, 1 any failure (an error, a stalled or timed out rollout).
const (
	exitOK    = 0
	exitError = 1
)

// options are the flags every command shares and the clients built from them.
type options struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
	output    string
	in        io.Reader
	out, err  io.Writer

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
	cmd := NewCommand(in, out, errOut)
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintln(errOut, "error:", err)
		return exitError
	}
	return exitOK
}

// NewCommand returns the root command, kubectl-sidecarset.
func NewCommand(in io.Reader, out, errOut io.Writer) *cobra.Command {
	return newRoot(newOptions(in, out, errOut))
}

func newOptions(in io.Reader, out, errOut io.Writer) *options {
	o := &options{loading: clientcmd.NewDefaultClientConfigLoadingRules(), overrides: &clientcmd.ConfigOverrides{}, in: in, out: out, err: errOut,
		now: time.Now, rand: rand.Float64}
	o.newClients = o.clusterClients
	return o
}

func newRoot(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "kubectl-sidecarset",
		Short:         "Inject, explain and roll out SidecarSets and NamespacedSidecarSets (apps.kruise.io/v1alpha1)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(o.in)
	cmd.SetOut(o.out)
	cmd.SetErr(o.err)
	flags := cmd.PersistentFlags()
	flags.StringVar(&o.loading.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	flags.StringVar(&o.overrides.CurrentContext, "context", "", "the kubeconfig context to use")
	flags.StringVarP(&o.overrides.Context.Namespace, "namespace", "n", "", "the namespace of the pods and of NamespacedSidecarSets (default: the kubeconfig context's)")
	flags.StringVar(&o.overrides.Context.Cluster, "cluster", "", "the kubeconfig cluster to use")
	flags.StringVar(&o.overrides.Context.AuthInfo, "user", "", "the kubeconfig user to use")
	flags.StringVar(&o.overrides.AuthInfo.Impersonate, "as", "", "user to impersonate")
	flags.StringArrayVar(&o.overrides.AuthInfo.ImpersonateGroups, "as-group", nil, "group to impersonate (repeatable)")
	flags.StringVarP(&o.output, "output", "o", "", "output format: yaml or json (default: human readable)")
	cmd.AddCommand(newInjectCommand(o), newExplainCommand(o), newRolloutCommand(o), newVersionCommand(o), newCheckCommand(o), newMigrateCommand(o))
	return cmd
}

func (o *options) clientConfig() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.loading, o.overrides)
}

// clusterClients builds the clients from the kubeconfig and flags.
func (o *options) clusterClients() (*clients, error) {
	cc := o.clientConfig()
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := cc.Namespace()
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
	cfg, err := o.clientConfig().ClientConfig()
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
	if o.overrides.Context.Namespace != "" {
		return o.overrides.Context.Namespace
	}
	return "default"
}

// checkOutput validates -o for commands that print objects.
func (o *options) checkOutput() error {
	switch o.output {
	case "", "yaml", "json":
		return nil
	}
	return fmt.Errorf("unsupported output format %q: use yaml or json", o.output)
}

// print writes v as YAML or JSON (-o json); human is used without -o when set.
func (o *options) print(v any, human func(io.Writer) error) error {
	switch {
	case o.output == "json":
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.out, string(data))
		return err
	case o.output == "yaml" || human == nil:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = o.out.Write(data)
		return err
	}
	return human(o.out)
}

// errStalled is returned when a rollout makes no progress; it exits with exitError.
var errStalled = errors.New("rollout stalled")
