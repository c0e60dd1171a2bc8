// Command kubectl-sidecarset is the kubectl plugin of the SidecarSet API server: `kubectl
// sidecarset inject` renders pods with their sidecars offline or against a cluster, `explain` says
// why a pod is or is not injected, and `rollout` drives SidecarSet rollouts. Install it with
// `go install github.com/sidecarset/apiserver/cmd/kubectl-sidecarset@latest` into a folder on PATH.
package main

import (
	"os"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
