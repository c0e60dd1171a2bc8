// Package version is `kubectl sidecarset version`: the plugin's version and the server's, as its
// leader records it on the injection webhook configuration it writes.
package version

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apimachineryversion "k8s.io/apimachinery/pkg/version"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	buildversion "github.com/sidecarset/apiserver/pkg/version"
)

// versionReport is what `kubectl sidecarset version` prints, as kubectl version does.
type versionReport struct {
	ClientVersion apimachineryversion.Info `json:"clientVersion"`
	// ServerVersion is the version of the server that last wrote the injection webhooks (its
	// leader); empty with --client.
	ServerVersion string `json:"serverVersion,omitempty"`
}

// NewCommand returns `kubectl sidecarset version`.
func NewCommand(o *cli.Options) *cobra.Command {
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
			if err := o.CheckOutput(); err != nil {
				return err
			}
			v := versionReport{ClientVersion: buildversion.Get()}
			if client {
				return o.Print(v, v.human)
			}
			server, err := serverVersion(cmd.Context(), o, webhooks)
			v.ServerVersion = server
			if perr := o.Print(v, v.human); perr != nil {
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
func serverVersion(ctx context.Context, o *cli.Options, webhooks string) (string, error) {
	c, err := o.NewClients()
	if err != nil {
		return "", err
	}
	cfg, err := c.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhooks, metav1.GetOptions{})
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
