package inject

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
)

// TestInjectNamespacedOffline: a NamespacedSidecarSet in --sidecarsets injects the pods of its
// namespace (the document's, else -n's) only, recorded under the name NS.NAME, as the server does.

// testNow is the clock of the offline commands under test.
var testNow = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func TestInjectNamespacedOffline(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	set := func(namespace string) string {
		return `apiVersion: apps.kruise.io/v1alpha1
kind: NamespacedSidecarSet
metadata: {name: log-agent` + namespace + `}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: agent, image: agent:v1}]
`
	}
	inDoc, noNamespace := write("in-doc.yaml", set(", namespace: shop")), write("none.yaml", set(""))
	pod := write("pod.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec: {containers: [{name: app, image: app:v1}]}
`)
	tests := []struct {
		name     string
		sets, ns string
		injected bool
	}{
		{"namespace of the document", inDoc, "shop", true},
		{"namespace of the document, pod elsewhere", inDoc, "other", false},
		{"namespace of -n", noNamespace, "shop", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := cli.NewOptions(strings.NewReader(""), &out, &errOut)
			o.Now = func() time.Time { return testNow }
			cmd := cli.NewRoot(o, NewCommand(o))
			cmd.SetArgs([]string{"inject", "-f", pod, "--sidecarsets", tt.sets, "-n", tt.ns})
			if err := cmd.Execute(); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			for _, w := range []string{"image: agent:v1", "shop.log-agent"} {
				if got := strings.Contains(out.String(), w); got != tt.injected {
					t.Errorf("output holds %q: %v, want %v:\n%s", w, got, tt.injected, out.String())
				}
			}
		})
	}
}
