package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

const conformance = "testdata/conformance"

type validationExpect struct {
	Rejected        bool        `json:"rejected"`
	MessageContains string      `json:"messageContains"`
	Stored          []assertion `json:"stored"`
	Alternative     *struct {
		Rejected bool `json:"rejected"`
	} `json:"alternative"`
}

type scenarioMeta struct {
	Title     string   `json:"title"`
	Operation string   `json:"operation"`
	Requires  []string `json:"requires"`
	Flags     []string `json:"flags"`
}

// TestValidationConformance runs every scenario of testdata/conformance/validation through
// kube-apiserver and the aggregation layer.
func TestValidationConformance(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(conformance, "validation", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) { runValidationScenario(t, dir) })
	}
}

func runValidationScenario(t *testing.T, dir string) {
	ctx := context.Background()
	var meta scenarioMeta
	var want validationExpect
	if err := readYAML(filepath.Join(dir, "meta.yaml"), &meta); err != nil {
		t.Fatal(err)
	}
	if err := readYAML(filepath.Join(dir, "expect.yaml"), &want); err != nil {
		t.Fatal(err)
	}
	deleteAllSidecarSets(t)
	setWhitelist(t, meta.Requires)
	for _, ss := range readSidecarSets(t, filepath.Join(dir, "existing.yaml")) {
		applySidecarSet(t, ss)
		waitSettled(t, ss.Name)
	}
	docs := readSidecarSets(t, filepath.Join(dir, "sidecarset.yaml"))
	if len(docs) != 1 {
		t.Fatalf("want one SidecarSet in sidecarset.yaml, got %d", len(docs))
	}
	err := applySidecarSet(t, docs[0])
	rejected := err != nil
	if rejected != want.Rejected && (want.Alternative == nil || rejected != want.Alternative.Rejected) {
		t.Fatalf("%s: rejected=%v (err %v), want %v", meta.Title, rejected, err, want.Rejected)
	}
	if rejected && rejected == want.Rejected && !strings.Contains(err.Error(), want.MessageContains) {
		t.Errorf("%s: error %q does not contain %q", meta.Title, err.Error(), want.MessageContains)
	}
	if rejected {
		return
	}
	got, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, docs[0].Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	doc := normalize(got)
	for _, a := range want.Stored {
		if err := a.check(doc); err != nil {
			t.Errorf("%s: stored: %v", meta.Title, err)
		}
	}
}

// readSidecarSets decodes the SidecarSets of a multi-document YAML file.
func readSidecarSets(t *testing.T, path string) []*v1alpha1.SidecarSet {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1alpha1.SidecarSet
	for _, doc := range strings.Split(string(data), "\n---") {
		if strings.TrimSpace(strings.ReplaceAll(doc, "---", "")) == "" {
			continue
		}
		ss := &v1alpha1.SidecarSet{}
		if err := yaml.Unmarshal([]byte(doc), ss); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if ss.Kind == "SidecarSet" {
			out = append(out, ss)
		}
	}
	return out
}

// applySidecarSet creates the SidecarSet or replaces the stored one of the same name.
func applySidecarSet(t *testing.T, ss *v1alpha1.SidecarSet) error {
	t.Helper()
	ctx := context.Background()
	client := sidecars.AppsV1alpha1().SidecarSets()
	_, err := client.Create(ctx, ss.DeepCopy(), metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	current, err := client.Get(ctx, ss.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	update := ss.DeepCopy()
	update.ResourceVersion = current.ResourceVersion
	_, err = client.Update(ctx, update, metav1.UpdateOptions{})
	return err
}

// waitSettled waits until the controller observed the SidecarSet's generation.
func waitSettled(t *testing.T, name string) *v1alpha1.SidecarSet {
	t.Helper()
	var ss *v1alpha1.SidecarSet
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 90*time.Second, true,
		func(ctx context.Context) (bool, error) {
			var err error
			ss, err = sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
			return err == nil && ss.Status.ObservedGeneration == ss.Generation, nil
		})
	if err != nil {
		t.Fatalf("SidecarSet %s not settled: %v", name, err)
	}
	return ss
}

func deleteAllSidecarSets(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	client := sidecars.AppsV1alpha1().SidecarSets()
	if err := client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("SidecarSets not deleted: %v", err)
	}
	time.Sleep(500 * time.Millisecond) // let the admission plugin's SidecarSet cache catch up
}

// setWhitelist installs the documented whitelist ConfigMap for scenarios that need it and removes
// it otherwise (the secure default).
func setWhitelist(t *testing.T, requires []string) {
	t.Helper()
	ctx := context.Background()
	wanted := false
	for _, r := range requires {
		if r == "patch-pod-metadata-allowed" || r == "patch-pod-metadata-whitelist-configmap" {
			wanted = true
		}
	}
	cms := kube.CoreV1().ConfigMaps("kruise-system")
	if !wanted {
		if err := cms.Delete(ctx, "kruise-configuration", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		return
	}
	cm := &corev1.ConfigMap{}
	if err := readYAML(filepath.Join(conformance, "common", "patch-metadata-whitelist.yaml"), cm); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
}
