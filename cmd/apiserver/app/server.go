package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/sidecarset/apiserver/pkg/apiserver"
	"github.com/sidecarset/apiserver/pkg/certificates"
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
	cmd.AddCommand(newSnapshotCommand())
	cmd.AddCommand(newCertificatesCommand(os.Getenv("POD_NAMESPACE")))
	return cmd
}

// Config turns the options into a server configuration. With --self-managed-certificates it
// first brings the certificates' Secrets and files up to date.
func (o *Options) Config() (*apiserver.Config, error) {
	keeper, err := o.certificateManager()
	if err != nil {
		return nil, err
	}
	certificates.ServeExpiry(o.expiry(keeper))
	dns, ips := o.certificateNames()
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", dns, ips); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	cfg := apiserver.NewConfig()
	cfg.ExtraConfig.Settings = o.Settings
	cfg.ExtraConfig.PatchPodMetadataDefaultsAllowed = utilfeature.DefaultFeatureGate.Enabled(PatchPodMetadataDefaultsAllowed)
	cfg.ExtraConfig.SortSidecarContainersByName = utilfeature.DefaultFeatureGate.Enabled(SortSidecarContainerByName)
	if keeper != nil {
		cfg.ExtraConfig.Certificates, cfg.ExtraConfig.CertificateInterval = keeper, o.Certificates.Interval
	}
	o.RecommendedOptions.ExtraAdmissionInitializers = cfg.AdmissionInitializers
	if err := o.RecommendedOptions.ApplyTo(cfg.GenericConfig); err != nil {
		return nil, err
	}
	return cfg, nil
}

// certificateManager returns the Manager of --self-managed-certificates (nil without) once it has
// brought the Secrets and files up to date: the server reads the files when it starts.
func (o *Options) certificateManager() (*certificates.Manager, error) {
	if !o.SelfManagedCertificates {
		return nil, nil
	}
	serving := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	etcd := o.RecommendedOptions.Etcd.StorageConfig.Transport
	files := []certificates.Files{
		{Secret: certificates.ServingSecret, Cert: serving.CertFile, Key: serving.KeyFile, Bundle: o.ServingCAFile},
		{Secret: certificates.EtcdClientSecret, Cert: etcd.CertFile, Key: etcd.KeyFile, Bundle: etcd.TrustedCAFile},
	}
	kubeconfig := ""
	if o.RecommendedOptions.CoreAPI != nil {
		kubeconfig = o.RecommendedOptions.CoreAPI.CoreAPIKubeconfigPath
	}
	m, err := o.Certificates.manager(o.Namespace, kubeconfig, files)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("self-managed certificates: %w", err)
	}
	return m, nil
}

// expiry is where the certificates' expiry metric reads: the files the server uses, and the
// Manager's Secrets (etcd's own certificates) when it has one.
func (o *Options) expiry(m *certificates.Manager) certificates.Expiry {
	etcd := o.RecommendedOptions.Etcd.StorageConfig.Transport
	e := certificates.Expiry{Files: map[string]string{
		"serving":     o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile,
		"serving-ca":  o.ServingCAFile,
		"etcd-client": etcd.CertFile,
		"etcd-ca":     etcd.TrustedCAFile,
	}}
	if m != nil {
		e.Manager = m
	}
	return e
}

// Run runs the server until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	cfg, err := o.Config()
	if err != nil {
		return err
	}
	server, err := cfg.Complete().New()
	if err != nil {
		return err
	}
	return server.Run(ctx)
}
