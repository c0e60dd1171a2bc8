package cli

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewRoot returns the root command, kubectl-sidecarset, shown as `kubectl sidecarset`, with the
// flags every command shares (kubectl's connection and output flags, completed) and commands
// under it.
func NewRoot(o *Options, commands ...*cobra.Command) *cobra.Command {
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
	o.Config.AddFlags(flags)
	addPrintFlags(flags, o.PrintFlags)
	registerFlagCompletion(cmd, o)
	cmd.AddCommand(commands...)
	return cmd
}

// registerFlagCompletion completes the values of -n, --context and -o.
func registerFlagCompletion(root *cobra.Command, o *Options) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := o.NewClients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := c.Kube.CoreV1().Namespaces().List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(list.Items))
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		return WithPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		raw, err := o.ClientConfig().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(raw.Contexts))
		for name := range raw.Contexts {
			names = append(names, name)
		}
		sort.Strings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return append(o.PrintFlags.AllowedFormats(), customColumnsPrefix), cobra.ShellCompDirectiveNoFileComp
	})
}

// WithPrefix keeps the names that start with prefix, sorted and without duplicates: the
// completions of a word typed so far.
func WithPrefix(names []string, prefix string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
