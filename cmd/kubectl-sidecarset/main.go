// Command kubectl-sidecarset is the kubectl plugin of the SidecarSet API server: `kubectl
// sidecarset inject` renders pods with their sidecars offline or against a cluster, `explain` says
// why a pod is or is not injected, `rollout` drives SidecarSet rollouts and `check` checks a
// cluster before and after installing the server. Install it with
// `go install github.com/sidecarset/apiserver/cmd/kubectl-sidecarset@latest` into a folder on PATH.
// Called as kubectl_complete-sidecarset (a link to it), it answers kubectl's shell completion.
package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app"
	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/completion"
)

func main() {
	args := os.Args[1:]
	if strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe") == completion.CompleteCommand {
		args = append([]string{"__complete"}, args...)
	}
	os.Exit(app.Main(args, os.Stdin, os.Stdout, os.Stderr))
}
