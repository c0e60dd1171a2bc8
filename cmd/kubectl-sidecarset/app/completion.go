package app

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CompleteCommand is the name kubectl runs to complete a plugin's arguments: for `kubectl
// sidecarset <TAB>` it runs kubectl_complete-sidecarset with the words typed so far and expects
// cobra's __complete answer. The plugin's binary answers under that name too (main), so a link
// named kubectl_complete-sidecarset to it works as well as the script `completion kubectl` writes.
const CompleteCommand = "kubectl_complete-sidecarset"

// completeScript is kubectl_complete-sidecarset as a shell script.
const completeScript = `#!/usr/bin/env sh
# kubectl runs this for "kubectl sidecarset <TAB>": it hands the words to the plugin's completion.
exec kubectl-sidecarset __complete "$@"
`

func newCompletionCommand(root *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion (kubectl|bash|zsh|fish|powershell)",
		Short: "Write a shell completion script, or kubectl's kubectl_complete-sidecarset",
		Long: `Write the script that completes this plugin's commands, flags and SidecarSet and
NamespacedSidecarSet names.

kubectl: kubectl (1.26 and later) completes "kubectl sidecarset <TAB>" by running the executable
kubectl_complete-sidecarset found on PATH; "completion kubectl" writes it. A link named
kubectl_complete-sidecarset to the kubectl-sidecarset binary works too.

bash, zsh, fish, powershell: completion of kubectl-sidecarset called by its own name.`,
		Example: `  kubectl sidecarset completion kubectl > ~/bin/kubectl_complete-sidecarset && chmod +x ~/bin/kubectl_complete-sidecarset
  kubectl-sidecarset completion bash > /etc/bash_completion.d/kubectl-sidecarset`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"kubectl", "bash", "zsh", "fish", "powershell"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeCompletion(root, args[0], cmd.OutOrStdout())
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	return cmd
}

func writeCompletion(root *cobra.Command, shell string, w io.Writer) error {
	switch shell {
	case "kubectl":
		_, err := io.WriteString(w, completeScript)
		return err
	case "bash":
		return root.GenBashCompletionV2(w, true)
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(w)
	}
	return fmt.Errorf("unknown shell %q: want kubectl, bash, zsh, fish or powershell", shell)
}

// registerFlagCompletion completes the values of -n, --context and -o.
func registerFlagCompletion(root *cobra.Command, o *options) {
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		c, err := o.newClients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := c.kube.CoreV1().Namespaces().List(cmd.Context(), metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := make([]string, 0, len(list.Items))
		for _, ns := range list.Items {
			names = append(names, ns.Name)
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
	_ = root.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		raw, err := o.clientConfig().RawConfig()
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
		return append(o.printFlags.AllowedFormats(), customColumnsPrefix), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeTargets completes the argument of the rollout commands: SidecarSet names, and
// namespacedsidecarset/NAME for the NamespacedSidecarSets of the command's namespace (sidecarset/NAME
// once that prefix is typed).
func (o *options) completeTargets(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.newClients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	kind, _, qualified := strings.Cut(toComplete, "/")
	sidecarSets, namespaced := true, true
	prefix, namespacedPrefix := "", "namespacedsidecarset/"
	if qualified {
		t, err := parseTarget(kind + "/x")
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sidecarSets, namespaced = !t.namespaced, t.namespaced
		prefix, namespacedPrefix = kind+"/", kind+"/"
	}
	var names []string
	if sidecarSets {
		if list, err := c.sidecarSet.AppsV1alpha1().SidecarSets().List(ctx, metav1.ListOptions{}); err == nil {
			for _, ss := range list.Items {
				names = append(names, prefix+ss.Name)
			}
		}
	}
	if namespaced {
		if list, err := c.sidecarSet.AppsV1alpha1().NamespacedSidecarSets(c.namespace).List(ctx, metav1.ListOptions{}); err == nil {
			for _, n := range list.Items {
				names = append(names, namespacedPrefix+n.Name)
			}
		}
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completePods completes explain's argument: the pods of the command's namespace.
func (o *options) completePods(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.newClients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := c.kube.CoreV1().Pods(c.namespace).List(cmd.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// withPrefix keeps the names that start with prefix, sorted and without duplicates.
func withPrefix(names []string, prefix string) []string {
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
