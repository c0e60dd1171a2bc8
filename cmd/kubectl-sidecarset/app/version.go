package app

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/version"
)

// versionReport is what `kubectl sidecarset version` prints, as kubectl version does.
type versionReport struct {
	ClientVersion apimachineryversion.Info `json:"clientVersion"`
	// ServerVersion is the version of the server that last wrote the injection webhooks (its
	// leader); empty with --client.
	ServerVersion string `json:"serverVersion,omitempty"`
}

func newVersionCommand(o *options) *cobra.Command {
	var client bool
	webhooks := "sidecarset-injector-active"
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the server's",
		Long: `Print the version of this plugin and of the SidecarSet server running in the cluster: the version
the server's leader records on the injection webhook configuration it writes (annotation
` + apps.ServerVersionAnnotation + `; reading it needs get on mutatingwebhookconfigurations).
A server replica serves its own version on /version and as the metric sidecarset_build_info.`,
		Example: `  kubectl sidecarset version
  kubectl sidecarset version --client -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.checkOutput(); err != nil {
				return err
			}
			v := versionReport{ClientVersion: version.Get()}
			if client {
				return o.print(v, v.human)
			}
			server, err := o.serverVersion(cmd.Context(), webhooks)
			v.ServerVersion = server
			if perr := o.print(v, v.human); perr != nil {
				return perr
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&client, "client", false, "print the plugin's version only (no cluster needed)")
	cmd.Flags().StringVar(&webhooks, "webhook-configuration", webhooks, "the injection webhook configuration the server writes")
	return cmd
}

// serverVersion reads the version the server recorded on the webhook configuration it writes.
func (o *options) serverVersion(ctx context.Context, webhooks string) (string, error) {
	c, err := o.newClients()
	if err != nil {
		return "", err
	}
	cfg, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhooks, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the server's version: %w", err)
	}
	v := cfg.Annotations[apps.ServerVersionAnnotation]
	if v == "" {
		return "", fmt.Errorf("the server has not recorded its version on %s (annotation %s): is it running, and of a version that records it?", webhooks, apps.ServerVersionAnnotation)
	}
	return v, nil
}

func (v versionReport) human(w io.Writer) error {
	if _, err := fmt.Fprintf(w, "Client Version: %s\n", v.ClientVersion.GitVersion); err != nil {
		return err
	}
	if v.ServerVersion == "" {
		return nil
	}
	_, err := fmt.Fprintf(w, "Server Version: %s\n", v.ServerVersion)
	return err
}
