package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/sidecarset/apiserver/pkg/apiserver"
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
	return cmd
}

// Config turns the options into a server configuration.
func (o *Options) Config() (*apiserver.Config, error) {
	dns, ips := o.certificateNames()
	if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", dns, ips); err != nil {
		return nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	cfg := apiserver.NewConfig()
	cfg.ExtraConfig.Settings = o.Settings
	cfg.ExtraConfig.PatchPodMetadataDefaultsAllowed = utilfeature.DefaultFeatureGate.Enabled(PatchPodMetadataDefaultsAllowed)
	cfg.ExtraConfig.SortSidecarContainersByName = utilfeature.DefaultFeatureGate.Enabled(SortSidecarContainerByName)
	o.RecommendedOptions.ExtraAdmissionInitializers = cfg.AdmissionInitializers
	if err := o.RecommendedOptions.ApplyTo(cfg.GenericConfig); err != nil {
		return nil, err
	}
	return cfg, nil
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
