package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
)

// TestExitCodes: 0 success, 1 a failure, 2 check could not run (no cluster to reach).
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "kubeconfig")
	data := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`
	if err := os.WriteFile(unreachable, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"version --client", []string{"version", "--client"}, cli.ExitOK},
		{"an unknown command", []string{"frobnicate"}, cli.ExitError},
		{"rollout status of an unreachable cluster", []string{"--kubeconfig", unreachable, "--request-timeout", "2s", "rollout", "status", "x", "--timeout", "1s"}, cli.ExitError},
		{"check of an unreachable cluster", []string{"--kubeconfig", unreachable, "--request-timeout", "2s", "check"}, cli.ExitCouldNotRun},
		{"check -o name", []string{"--kubeconfig", unreachable, "check", "-o", "name"}, cli.ExitCouldNotRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut strings.Builder
			if got := Main(tt.args, strings.NewReader(""), io.Discard, &errOut); got != tt.want {
				t.Errorf("exit %d, want %d\n%s", got, tt.want, errOut.String())
			}
		})
	}
}
