package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/conformance"
)

// Scenario folders: the published catalogue (a copy of the shared one) and this project's extra
// scenarios in the same format. common/ files always come from the published catalogue.
const (
	conformanceDir = "testdata/conformance"
	extraDir       = "testdata/extra-conformance"
)

// scenarioDirs lists the scenario folders of one kind (injection, validation, rollout) in both
// catalogues; the extra ones are named extra/<NN-name> in subtests.
func scenarioDirs(t *testing.T, kind string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range []string{conformanceDir, extraDir} {
		dirs, err := filepath.Glob(filepath.Join(root, kind, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range dirs {
			name := filepath.Base(dir)
			if root == extraDir {
				name = "extra/" + name
			}
			out[name] = dir
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %s scenarios", kind)
	}
	return scenarioShard(t, out)
}

// scenarioShard keeps every n-th scenario from the k-th (in name order) when E2E_SCENARIO_SHARD is
// k/n: hack/e2e.sh runs a long catalogue on n clusters at once, one part on each.
func scenarioShard(t *testing.T, dirs map[string]string) map[string]string {
	t.Helper()
	spec := os.Getenv("E2E_SCENARIO_SHARD")
	if spec == "" {
		return dirs
	}
	var k, n int
	if _, err := fmt.Sscanf(spec, "%d/%d", &k, &n); err != nil || n < 1 || k < 0 || k >= n {
		t.Fatalf("E2E_SCENARIO_SHARD=%q: want k/n with 0 <= k < n", spec)
	}
	out := map[string]string{}
	for i, name := range sortedNames(dirs) {
		if i%n == k {
			out[name] = dirs[name]
		}
	}
	if len(out) == 0 {
		t.Fatalf("E2E_SCENARIO_SHARD=%s: no scenario of the %d", spec, len(dirs))
	}
	t.Logf("E2E_SCENARIO_SHARD=%s: %d of the %d scenarios", spec, len(out), len(dirs))
	return out
}

// sortedNames returns the keys of a scenario map in order.
func sortedNames(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// mustRead decodes a scenario file strictly (see package conformance).
func mustRead(t *testing.T, path string, optional bool, out interface{}) bool {
	t.Helper()
	found, err := conformance.ReadStrict(path, optional, out)
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// toDoc renders an object as the generic JSON document assertions run on.
func toDoc(obj interface{}) interface{} { return conformance.Normalize(obj) }

// readYAML decodes a YAML file into out (not strictly: for Kubernetes objects); a missing file
// leaves out untouched.
func readYAML(path string, out interface{}) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}

func yamlToJSON(y string) ([]byte, error) { return yaml.YAMLToJSON([]byte(y)) }

// decodeSidecarSet decodes one SidecarSet manifest (YAML or JSON). The manifest is the server's to
// validate: fields unknown to this project's types are an error rather than silently dropped.
func decodeSidecarSet(data []byte) (*v1alpha1.SidecarSet, error) {
	ss := &v1alpha1.SidecarSet{}
	if err := conformance.DecodeStrict(data, ss); err != nil {
		return nil, err
	}
	return ss, nil
}

// applyRequirements checks a scenario's requirement tokens and makes the cluster provide them:
// the whitelist ConfigMap in force or absent, native sidecars accepted (else the scenario is
// skipped: a runner cannot upgrade the cluster).
func applyRequirements(t *testing.T, tokens []string) conformance.Requirements {
	t.Helper()
	req, err := conformance.ParseRequirements(tokens)
	if err != nil {
		t.Fatal(err)
	}
	setWhitelist(t, req.Whitelist)
	if req.NativeSidecars {
		applyNamespaces(t, filepath.Join(conformanceDir, "common", "namespace.yaml")) // the probe's namespace
		if err := nativeSidecarsAccepted(); err != nil {
			t.Skipf("requires %s, which this cluster does not provide: %v", conformance.K8sNativeSidecars, err)
		}
	}
	return req
}

var nativeSidecars struct {
	once sync.Once
	err  error
}

// nativeSidecarsAccepted dry-runs a pod whose initContainer has restartPolicy Always and checks the
// API server keeps it (Kubernetes >= 1.29, or 1.28 with the SidecarContainers gate).
func nativeSidecarsAccepted() error {
	nativeSidecars.once.Do(func() {
		always := corev1.ContainerRestartPolicyAlways
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "native-sidecar-probe", Namespace: "sidecarset-acc"},
			Spec: corev1.PodSpec{
				AutomountServiceAccountToken: new(bool),
				InitContainers:               []corev1.Container{{Name: "probe", Image: "busybox:1.36", RestartPolicy: &always}},
				Containers:                   []corev1.Container{{Name: "app", Image: "busybox:1.36"}},
			},
		}
		got, err := kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err != nil:
			nativeSidecars.err = err
		case len(got.Spec.InitContainers) == 0 || got.Spec.InitContainers[0].RestartPolicy == nil ||
			*got.Spec.InitContainers[0].RestartPolicy != always:
			nativeSidecars.err = errorString("initContainers[].restartPolicy: Always was dropped")
		}
	})
	return nativeSidecars.err
}

type errorString string

func (e errorString) Error() string { return string(e) }

// setWhitelist installs the documented whitelist ConfigMap (common/patch-metadata-whitelist.yaml)
// or removes it (the secure default, requirement patch-pod-metadata-not-configured).
func setWhitelist(t *testing.T, wanted bool) {
	t.Helper()
	path := filepath.Join(conformanceDir, "common", "patch-metadata-whitelist.yaml")
	if wanted {
		applyWhitelist(t, path)
		return
	}
	cm := readWhitelist(t, path)
	if err := kube.CoreV1().ConfigMaps(cm.Namespace).Delete(context.Background(), cm.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitWhitelistVersion(t, "0")
}

// readWhitelist reads a whitelist ConfigMap written for OpenKruise, which reads it in its own
// namespace kruise-system, and moves it to the namespace this server reads it in (its own).
func readWhitelist(t *testing.T, path string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := readYAML(path, cm); err != nil {
		t.Fatal(err)
	}
	cm.Namespace = serverNamespace
	return cm
}

// applyWhitelist creates or updates the whitelist ConfigMap of path (see readWhitelist).
func applyWhitelist(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	cm := readWhitelist(t, path)
	cms := kube.CoreV1().ConfigMaps(cm.Namespace)
	cur, err := cms.Get(ctx, cm.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		cur, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	case err == nil:
		cur.Data = cm.Data
		cur, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	waitWhitelistVersion(t, cur.ResourceVersion)
}

// waitWhitelistVersion waits until the admission of SidecarSet writes reads the whitelist
// ConfigMap at resourceVersion rv ("0": none), as the server reports it on /metrics.
func waitWhitelistVersion(t *testing.T, rv string) {
	t.Helper()
	waitServerGauge(t, "sidecarset_patch_metadata_whitelist_resource_version", rv)
}

// waitServerGauge waits until server replica 1 (the one kube-apiserver sends requests to) reports
// series (a metric with its labels, as /metrics prints it) at value.
func waitServerGauge(t *testing.T, series, value string) {
	t.Helper()
	eventually(t, series+" "+value, time.Minute, func(ctx context.Context) (bool, string) {
		data, err := scrapeReplica(ctx, t, 1)
		if err != nil {
			return false, err.Error()
		}
		got := grepLines(data, series+" ")
		return strings.TrimSpace(got) == series+" "+value, got
	})
}

// applyNamespaces creates the namespaces of a namespace.yaml, or updates their labels, and returns
// their names.
func applyNamespaces(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	nss, err := conformance.Namespaces(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var names []string
	for _, ns := range nss {
		setNamespace(t, ns.Name, ns.Labels)
		names = append(names, ns.Name)
	}
	return names
}

// setNamespace creates a namespace with the labels, or sets its labels to them, and waits for
// its default ServiceAccount.
func setNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	cur, err := kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		_, err = kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	} else if err == nil {
		cur.Labels = map[string]string{}
		for k, v := range labels {
			cur.Labels[k] = v
		}
		_, err = kube.CoreV1().Namespaces().Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
	// Not fatal: what follows fails, saying why, if it needs the ServiceAccount.
	if last, ok := poll(10*time.Second, func(ctx context.Context) (bool, string) {
		_, err := kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprintf("get: %v", err)
	}); !ok {
		t.Logf("waited 10s for the default ServiceAccount of namespace %s; last seen: %s", name, last)
	}
}

// readSidecarSetDocs returns the documents of a multi-document SidecarSet file as text (nil when
// the file does not exist), so that ${VAR} can be substituted before decoding.
func readSidecarSetDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return conformance.SplitDocuments(data)
}

// readSidecarSets decodes the SidecarSets of a multi-document YAML file; any other kind is an error.
func readSidecarSets(t *testing.T, path string) []*v1alpha1.SidecarSet {
	t.Helper()
	var out []*v1alpha1.SidecarSet
	for i, doc := range readSidecarSetDocs(t, path) {
		ss, err := decodeSidecarSet(doc)
		if err != nil {
			t.Fatalf("%s document %d: %v", path, i+1, err)
		}
		if ss.Kind != "SidecarSet" {
			t.Fatalf("%s document %d: kind %q, want SidecarSet", path, i+1, ss.Kind)
		}
		out = append(out, ss)
	}
	return out
}
