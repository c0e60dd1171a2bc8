package cli

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
			o := NewOptions(strings.NewReader(""), io.Discard, io.Discard)
			if err := NewRoot(o).PersistentFlags().Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			c, err := o.ClusterClients()
			if err != nil {
				t.Fatal(err)
			}
			if c.Namespace != tt.want {
				t.Errorf("namespace %q, want %q", c.Namespace, tt.want)
			}
		})
	}
}
