package explain

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/cli"
)

// testNow is the clock of the offline command under test.
var testNow = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// TestExplainOffline runs `explain -f` with --sidecarsets: no cluster, human output.
func TestExplainOffline(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sets := write("sets.yaml", `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: logs}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: agent, image: agent:v1, transferEnv: [{sourceContainerName: app, envName: ZONE}]}]
---
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  containers: [{name: proxy, image: proxy:v1}]
---
apiVersion: apps.kruise.io/v1alpha1
kind: NamespacedSidecarSet
metadata: {name: tracer, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: tracer, image: tracer:v1}]
`)
	deploy := write("deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: app, image: app:v1}]}
`)
	tests := []struct {
		name string
		args []string
		want []string
	}{{
		name: "injected and mismatched",
		args: []string{"explain", "-f", deploy, "--sidecarsets", sets},
		want: []string{"Pod shop/web-", "SidecarSet logs: injected (Injected)", "revision: not recorded yet (the latest spec)",
			`skipped spec.containers[0].transferEnv[0]: container "app" has no env var "ZONE"; nothing copied`,
			`SidecarSet db: not injected (SelectorMismatch): spec.selector: matchLabels app=db: label app is "web"`,
			"NamespacedSidecarSet shop/tracer: injected (Injected)"},
	}, {
		name: "excluded namespace",
		args: []string{"explain", "-f", deploy, "--sidecarsets", sets, "--excluded-namespaces", "shop"},
		want: []string{`namespace "shop" is excluded`, "SidecarSet logs: not injected (NamespaceExcluded)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			o := cli.NewOptions(strings.NewReader(""), &out, &errOut)
			o.Now = func() time.Time { return testNow }
			cmd := cli.NewRoot(o, NewCommand(o))
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
