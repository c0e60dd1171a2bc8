package app

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientNamespace: the namespace of pods and NamespacedSidecarSets is -n/--namespace, else the
// kubeconfig context's, else "default", as kubectl's.
func TestClientNamespace(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := func(name, namespace string) string {
		p := filepath.Join(dir, name)
		data := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u, namespace: "` + namespace + `"}}]
current-context: ctx
`
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withNamespace, without := kubeconfig("with", "team-a"), kubeconfig("without", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"the context's", []string{"--kubeconfig", withNamespace}, "team-a"},
		{"-n", []string{"--kubeconfig", withNamespace, "-n", "shop"}, "shop"},
		{"--namespace", []string{"--kubeconfig", withNamespace, "--namespace=shop"}, "shop"},
		{"none", []string{"--kubeconfig", without}, "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOptions(strings.NewReader(""), io.Discard, io.Discard)
			if err := newRoot(o).PersistentFlags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c, err := o.clusterClients()
			if err != nil {
				t.Fatal(err)
			}
			if c.namespace != tt.want {
				t.Errorf("namespace %q, want %q", c.namespace, tt.want)
			}
		})
	}
}

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
		{"version --client", []string{"version", "--client"}, exitOK},
		{"an unknown command", []string{"frobnicate"}, exitError},
		{"rollout status of an unreachable cluster", []string{"--kubeconfig", unreachable, "--request-timeout", "2s", "rollout", "status", "x", "--timeout", "1s"}, exitError},
		{"check of an unreachable cluster", []string{"--kubeconfig", unreachable, "--request-timeout", "2s", "check"}, exitCouldNotRun},
		{"check -o name", []string{"--kubeconfig", unreachable, "check", "-o", "name"}, exitCouldNotRun},
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
