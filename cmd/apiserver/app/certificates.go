package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sidecarset/apiserver/pkg/certificates"
)

// CertificateOptions are the flags of the self-managed certificates (certificates.source=
// self-managed), shared by the server and `certificates ensure`.
type CertificateOptions struct {
	// EtcdMembers is the number of etcd members the certificates name.
	EtcdMembers int
	// CALife and LeafLife are the lifetimes of new CAs and certificates.
	CALife, LeafLife time.Duration
	// Interval is how often the Secrets are checked (0 for `certificates ensure`: once).
	Interval time.Duration
	// APIServices get the serving CA's trust bundle as their caBundle.
	APIServices []string

	// Client and Aggregator replace the clients made from the kubeconfig (tests).
	Client     kubernetes.Interface
	Aggregator rest.Interface
}

// defaultAPIServices are the chart's APIServices.
var defaultAPIServices = []string{"v1beta1.apps.kruise.io", "v1alpha1.apps.kruise.io", "v1.admission.kruise.io"}

func newCertificateOptions(interval time.Duration, apiServices []string) CertificateOptions {
	return CertificateOptions{EtcdMembers: 3, CALife: certificates.DefaultCALife, LeafLife: certificates.DefaultLeafLife,
		Interval: interval, APIServices: apiServices}
}

// addFlags adds the flags, each name with prefix.
func (c *CertificateOptions) addFlags(fs *pflag.FlagSet, prefix string) {
	fs.IntVar(&c.EtcdMembers, prefix+"etcd-members", c.EtcdMembers,
		"Number of etcd members (the StatefulSet sidecarset-etcd) etcd's server and peer certificates name.")
	fs.DurationVar(&c.CALife, prefix+"ca-lifetime", c.CALife,
		"Lifetime of a new CA; a successor joins the trust bundle at 2/3 of it and signs from 5/6 of it.")
	fs.DurationVar(&c.LeafLife, prefix+"lifetime", c.LeafLife,
		"Lifetime of a new certificate; it is issued again at 2/3 of it.")
	fs.DurationVar(&c.Interval, prefix+"check-interval", c.Interval,
		"How often the certificates' Secrets are checked and the certificates renewed when due.")
	fs.StringSliceVar(&c.APIServices, prefix+"apiservices", c.APIServices,
		"APIServices whose caBundle is kept to the serving CA's trust bundle.")
}

// validate checks the flags, each error naming its flag (with prefix).
func (c *CertificateOptions) validate(prefix string, minInterval time.Duration) []error {
	var errs []error
	if c.EtcdMembers < 1 || c.EtcdMembers%2 == 0 {
		errs = append(errs, fmt.Errorf("--%setcd-members must be odd and positive, not %d", prefix, c.EtcdMembers))
	}
	if c.LeafLife <= 0 {
		errs = append(errs, fmt.Errorf("--%slifetime must be positive, not %v", prefix, c.LeafLife))
	} else if c.CALife < 3*c.LeafLife {
		errs = append(errs, fmt.Errorf("--%sca-lifetime (%v) must be at least three times --%slifetime (%v)", prefix, c.CALife, prefix, c.LeafLife))
	}
	if c.Interval < minInterval {
		errs = append(errs, fmt.Errorf("--%scheck-interval must be at least %v, not %v", prefix, minInterval, c.Interval))
	}
	return errs
}

// manager returns the Manager of the installation in namespace, with clients from kubeconfig
// (in-cluster when empty) unless the options carry their own.
func (c *CertificateOptions) manager(namespace, kubeconfig string, files []certificates.Files) (*certificates.Manager, error) {
	client, agg := c.Client, c.Aggregator
	if client == nil {
		cfg, err := clientConfig(kubeconfig)
		if err != nil {
			return nil, err
		}
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, err
		}
		agg = client.Discovery().RESTClient()
	}
	spec := certificates.Installation(namespace, c.EtcdMembers, c.CALife, c.LeafLife)
	return &certificates.Manager{Spec: spec, Secrets: client.CoreV1().Secrets(namespace), Files: files,
		Labels: map[string]string{
			"app.kubernetes.io/managed-by": "sidecarset-apiserver",
			"app.kubernetes.io/part-of":    "sidecarset-apiserver",
			"app.kubernetes.io/component":  "certificates",
		},
		APIServices: c.APIServices, BundleOf: certificates.ServingCASecret, AggregatorREST: agg}, nil
}

func clientConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return rest.InClusterConfig()
}

// newCertificatesCommand is `sidecarset-apiserver certificates ensure`: what the init container
// and the sidecar of etcd's pods and the init container of the server's run.
func newCertificatesCommand(namespace string) *cobra.Command {
	c := newCertificateOptions(0, nil)
	var kubeconfig string
	var writes []string
	ensure := &cobra.Command{
		Use:   "ensure",
		Short: "Create the installation's CAs and certificates in Secrets of --namespace where missing, renew them when due, and write some into directories",
		Long: `Create the installation's CAs and certificates (certificates.source=self-managed) in Secrets of --namespace
where missing, renew those due, write the Secrets --write names into directories (tls.crt, tls.key, ca.crt),
and set the caBundle of --apiservices. Idempotent: replicas and pods running it at once agree (a create that
another got in first, or an update after another's, reads again). With --check-interval, again at that interval
until stopped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := parseWrites(writes)
			if err != nil {
				return err
			}
			if errs := c.validate("", 0); len(errs) > 0 {
				return errs[0]
			}
			if namespace == "" {
				return fmt.Errorf("--namespace is required")
			}
			m, err := c.manager(namespace, kubeconfig, files)
			if err != nil {
				return err
			}
			return runEnsure(cmd.Context(), m, c.Interval)
		},
	}
	fs := ensure.Flags()
	fs.StringVar(&namespace, "namespace", namespace, "Namespace of the Secrets (default: $POD_NAMESPACE).")
	fs.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (empty: in-cluster).")
	fs.StringArrayVar(&writes, "write", nil, "SECRET=DIR: write the Secret's tls.crt, tls.key and ca.crt into DIR (repeatable).")
	c.addFlags(fs, "")
	cmd := &cobra.Command{Use: "certificates", Short: "Self-managed certificates", Args: cobra.NoArgs}
	cmd.AddCommand(ensure)
	return cmd
}

// runEnsure runs Ensure once, failing on an error, then every interval (when positive) until ctx
// ends.
func runEnsure(ctx context.Context, m *certificates.Manager, interval time.Duration) error {
	if err := m.Ensure(ctx); err != nil {
		return err
	}
	if interval > 0 {
		m.Run(ctx, interval)
	}
	return nil
}

// parseWrites reads --write SECRET=DIR flags.
func parseWrites(writes []string) ([]certificates.Files, error) {
	var files []certificates.Files
	for _, w := range writes {
		secret, dir, ok := strings.Cut(w, "=")
		if !ok || secret == "" || dir == "" {
			return nil, fmt.Errorf("--write %q: want SECRET=DIR", w)
		}
		files = append(files, certificates.Files{Secret: secret, Cert: filepath.Join(dir, "tls.crt"),
			Key: filepath.Join(dir, "tls.key"), Bundle: filepath.Join(dir, "ca.crt")})
	}
	return files, nil
}
