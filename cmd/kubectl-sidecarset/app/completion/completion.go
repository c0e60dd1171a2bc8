// Package completion is `kubectl sidecarset completion`: the shell completion scripts of the
// plugin, and the kubectl_complete-sidecarset that kubectl runs to complete its arguments.
package completion

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
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

// NewCommand returns `kubectl sidecarset completion`, which writes the completion of root.
func NewCommand(root *cobra.Command) *cobra.Command {
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
