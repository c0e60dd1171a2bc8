package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/test/docs"
)

// docsNamespace is the namespace the documentation's commands run in: the kubeconfig's context
// namespace while they run, so that a namespaced command without -n lands there.
const docsNamespace = "sidecarset-docs"

// TestDocs runs the documentation against the local cluster as a kubectl user would type it:
// every command block of README.md and docs/ marked <!-- test: run --> (test/docs describes the
// convention; TestCommandBlocksMarked in make unit requires every command block to be marked run
// or skip with a reason), with the cluster's kubectl and the plugin first on PATH and KUBECONFIG
// set, from the repository's root; and every SidecarSet and NamespacedSidecarSet manifest not
// marked skip, applied with --dry-run=server (a NamespacedSidecarSet in docsNamespace). The
// manual's example (test-sidecarset) and a pod test-pod in docsNamespace exist while they run. A
// failure names the block's file:line.
//
// It is a serial-phase test: the documented `kubectl sidecarset check` reads every SidecarSet and
// pod of the cluster and exits 1 on any error it finds, so other tests' deliberate stalls beside
// it would fail it.
func TestDocs(t *testing.T) {
	deleteAllSidecarSets(t)
	applyManualExample(t)

	if out, err := runKubectl(t, "", "create", "namespace", docsNamespace); err != nil && !strings.Contains(out, "AlreadyExists") {
		t.Fatalf("create namespace %s: %v\n%s", docsNamespace, err, out)
	}
	t.Cleanup(func() { _, _ = runKubectl(t, "", "delete", "namespace", docsNamespace, "--wait=false") })
	pod := strings.Replace(manualPod, "namespace: default", "namespace: "+docsNamespace, 1)
	if out, err := runKubectl(t, pod, "apply", "-f", "-"); err != nil {
		t.Fatalf("create pod %s/test-pod: %v\n%s", docsNamespace, err, out)
	}

	env := docsEnv(t)
	files, err := docs.Files(root)
	if err != nil {
		t.Fatal(err)
	}
	run, applied, skipped := 0, 0, 0
	for _, f := range files {
		content, err := docs.ReadFile(root, f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := docs.Blocks(f, content)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			switch {
			case b.Mark == "skip":
				skipped++
			case b.Mark == "run" && b.IsCommand():
				run++
				runDocBlock(t, b, env)
			case b.IsSidecarSetYAML():
				applied++
				applyDocManifest(t, b)
			}
		}
	}
	t.Logf("documentation: %d command blocks run, %d manifests applied with --dry-run=server, %d blocks skipped", run, applied, skipped)
	if run == 0 {
		t.Error("no command block ran")
	}
}

// docsEnv is the environment the documentation's commands run in: PATH with the cluster's
// kubectl and kubectl-sidecarset first, KUBECONFIG a copy of the cluster's whose context
// namespace is docsNamespace.
func docsEnv(t *testing.T) []string {
	t.Helper()
	if _, _, err := plugin(t, "version", "--client"); err != nil { // builds the plugin
		t.Fatalf("kubectl sidecarset version --client: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"kubectl": kubectl, "kubectl-sidecarset": pluginPath} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	config, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, config, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(kubectl, "--kubeconfig", kc, "config", "set-context", "--current", "--namespace="+docsNamespace).CombinedOutput(); err != nil {
		t.Fatalf("kubectl config set-context: %v\n%s", err, out)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return append(env, "KUBECONFIG="+kc, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// runDocBlock runs a command block as one bash script from the repository's root, again for up to
// 30 seconds while it fails (the server aggregates its OpenAPI and loads its caches
// asynchronously), and fails t with the block's file:line and its output.
func runDocBlock(t *testing.T, b docs.Block, env []string) {
	t.Helper()
	script := b.Script()
	// Every 3 seconds: each try runs the whole block.
	last, ok := pollEvery(3*time.Second, 30*time.Second, func(ctx context.Context) (bool, string) {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		return err == nil, fmt.Sprintf("%v\n%s", err, out)
	})
	if !ok {
		t.Errorf("%s: the block fails as the documentation gives it:\n%s\nlast run: %s", b.Where(), script, last)
	}
}

// applyDocManifest applies a SidecarSet or NamespacedSidecarSet manifest with --dry-run=server (a
// NamespacedSidecarSet in docsNamespace) and fails t with the block's file:line.
func applyDocManifest(t *testing.T, b docs.Block) {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(b.Text), &obj); err != nil {
		t.Errorf("%s: %v", b.Where(), err)
		return
	}
	if obj["kind"] == "NamespacedSidecarSet" {
		meta, _ := obj["metadata"].(map[string]any)
		if meta == nil {
			t.Errorf("%s: no metadata", b.Where())
			return
		}
		meta["namespace"] = docsNamespace
	}
	manifest, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	// Every 3 seconds: each try runs kubectl.
	last, ok := pollEvery(3*time.Second, 30*time.Second, func(context.Context) (bool, string) {
		out, err := runKubectl(t, string(manifest), "apply", "--dry-run=server", "-f", "-")
		var exit *exec.ExitError
		if errors.As(err, &exit) && strings.Contains(out, "is invalid") {
			return true, "invalid: " + out // no retry makes it valid
		}
		return err == nil, fmt.Sprintf("%v\n%s", err, out)
	})
	if !ok || strings.HasPrefix(last, "invalid: ") {
		t.Errorf("%s: the manifest is refused by kubectl apply --dry-run=server:\n%s", b.Where(), strings.TrimPrefix(last, "invalid: "))
	}
}
