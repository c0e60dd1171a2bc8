// Package chart renders the Helm chart charts/sidecarset-apiserver, the one source of the
// kustomization artifacts/deploy (hack/render-deploy.sh). Its tests (ordinary go test, no cluster)
// check that each combination of values renders every object it must and that each value reaches
// every place it must; Render is for tests against a cluster (helm template | kubectl apply
// --dry-run=server).
//
// helm is built from the Go module proxy by hack/install-helm.sh (the first time, about two
// minutes), kubectl by hack/install-tools.sh; both into _output/tools.
package chart

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// Dir is the chart, relative to the repository root.
	Dir = "charts/sidecarset-apiserver"
	// Release is the release name the tests render with.
	Release = "sidecarset"
	// Namespace is the release namespace the tests render with (helm --namespace).
	Namespace = "sidecarset-system"
	// DeployNamespace is the namespace of artifacts/deploy: hack/render-deploy.sh renders the base
	// into it and hack/deploy-certs.sh names it by default (the server's own, as the local cluster
	// of hack/local-up.sh runs it; never OpenKruise's kruise-system).
	DeployNamespace = "sidecarset-system"
)

// CertFiles maps the chart's certificate values (certificates.source=secrets) to the files
// hack/deploy-certs.sh writes.
var CertFiles = map[string]string{
	"certificates.etcdCA":          "etcd-ca.crt",
	"certificates.etcdServer.cert": "etcd-server.crt",
	"certificates.etcdServer.key":  "etcd-server.key",
	"certificates.etcdPeer.cert":   "etcd-peer.crt",
	"certificates.etcdPeer.key":    "etcd-peer.key",
	"certificates.etcdClient.cert": "etcd-client.crt",
	"certificates.etcdClient.key":  "etcd-client.key",
	"certificates.servingCA":       "serving-ca.crt",
	"certificates.apiserver.cert":  "apiserver.crt",
	"certificates.apiserver.key":   "apiserver.key",
}

// Root returns the repository root, found from the working directory upwards (the directory with
// the chart and hack/install-helm.sh).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack/install-helm.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no hack/install-helm.sh above the working directory")
		}
		dir = parent
	}
}

// Helm returns the helm binary of hack/install-helm.sh, which builds it when it is missing.
func Helm(root string) (string, error) {
	out, err := run(root, nil, filepath.Join(root, "hack/install-helm.sh"))
	if err != nil {
		return "", err
	}
	return lastLine(out), nil
}

var kubeVersion = regexp.MustCompile(`(?m)^KUBE_VERSION=(\S+)`)

// Kubectl returns the kubectl of hack/install-tools.sh, running it (which builds the local
// cluster's binaries) only when that kubectl is missing.
func Kubectl(root string) (string, error) {
	script := filepath.Join(root, "hack/install-tools.sh")
	src, err := os.ReadFile(script)
	if err != nil {
		return "", err
	}
	if m := kubeVersion.FindSubmatch(src); m != nil {
		kubectl := filepath.Join(root, "_output/tools", "k8s-"+string(m[1]), "bin/kubectl")
		if _, err := os.Stat(kubectl); err == nil {
			return kubectl, nil
		}
	}
	out, err := run(root, nil, script)
	if err != nil {
		return "", err
	}
	return filepath.Join(lastLine(out), "kubectl"), nil
}

// WriteCerts runs hack/deploy-certs.sh into dir, for namespace (empty: its default, DeployNamespace).
func WriteCerts(root, dir, namespace string) error {
	var env []string
	if namespace != "" {
		env = []string{"NAMESPACE=" + namespace}
	}
	_, err := run(root, env, filepath.Join(root, "hack/deploy-certs.sh"), dir)
	return err
}

// CertFlags returns helm's flags for the certificates hack/deploy-certs.sh wrote into dir:
// certificates.source=secrets (the default is self-managed) and a --set-file for each file.
func CertFlags(dir string) []string {
	keys := make([]string, 0, len(CertFiles))
	for k := range CertFiles {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	flags := []string{"--set", "certificates.source=secrets"}
	for _, k := range keys {
		flags = append(flags, "--set-file", k+"="+filepath.Join(dir, CertFiles[k]))
	}
	return flags
}

// Template returns `helm template` of the chart (release Release in namespace Namespace, which a
// --namespace in args overrides) with args (values flags).
func Template(helm, root string, args ...string) ([]byte, error) {
	return run(root, nil, helm, append([]string{"template", Release, filepath.Join(root, Dir), "--namespace", Namespace}, args...)...)
}

// Render builds helm if needed and returns the chart rendered with the certificates of certDir
// (written there by hack/deploy-certs.sh first: it keeps existing files) and args, for
// `kubectl apply --dry-run=server -f -` against a cluster. hack/chart-template.sh does the same
// from a shell.
func Render(root, certDir string, args ...string) ([]byte, error) {
	helm, err := Helm(root)
	if err != nil {
		return nil, err
	}
	if err := WriteCerts(root, certDir, Namespace); err != nil {
		return nil, err
	}
	return Template(helm, root, append(CertFlags(certDir), args...)...)
}

// Kustomize returns `kubectl kustomize dir`.
func Kustomize(kubectl, dir string) ([]byte, error) {
	return run(dir, nil, kubectl, "kustomize", dir)
}

func run(dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Key names an object: kind, namespace (empty for cluster-scoped objects) and name.
type Key struct{ Kind, Namespace, Name string }

func (k Key) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

// Parse reads a multi-document YAML stream (helm template's or kubectl kustomize's output) into
// objects by key; empty documents are skipped, a key seen twice is an error.
func Parse(manifest []byte) (map[Key]*unstructured.Unstructured, error) {
	objs := map[Key]*unstructured.Unstructured{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]interface{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("%w in\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		k := Key{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		if k.Kind == "" || k.Name == "" {
			return nil, fmt.Errorf("a document without kind or name:\n%s", doc)
		}
		if _, dup := objs[k]; dup {
			return nil, fmt.Errorf("%s twice", k)
		}
		objs[k] = u
	}
}

// CopyTree copies the regular files under src to dst, leaving out top-level directories named skip.
func CopyTree(src, dst, skip string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel == skip {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
