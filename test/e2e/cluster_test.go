package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const manualPod = `apiVersion: v1
kind: Pod
metadata:
  labels:
    app: nginx
  name: test-pod
  namespace: default
spec:
  automountServiceAccountToken: false
  containers:
  - name: app
    image: nginx:1.15.1
`

func applyManualExample(t *testing.T) {
	t.Helper()
	if inParallelPhase() { // under fixtureManualExample
		deleteSidecarSets(t, "test-sidecarset")
	} else {
		deleteAllSidecarSets(t)
	}
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts/examples/01-test-sidecarset.yaml")); err != nil {
		t.Fatalf("apply: %v: %s", err, out)
	}
	waitSettled(t, "test-sidecarset")
}

// TestKubectl covers what a user does with kubectl: get with printer columns, explain,
// server-side apply and strategic merge patch.
func TestKubectl(t *testing.T) {
	parallelTest(t, fixtureManualExample)
	applyManualExample(t)
	out, err := runKubectl(t, "", "get", "sidecarsets")
	if err != nil || !strings.Contains(strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "), "NAME MATCHED UPDATED READY AGE") {
		t.Errorf("get sidecarsets: %v\n%s", err, out)
	}
	// kube-apiserver aggregates this server's OpenAPI asynchronously: right after the server
	// (re)starts, explain may not find the resource for a moment.
	// Every second: each try runs kubectl.
	if last, ok := pollEvery(time.Second, time.Minute, func(context.Context) (bool, string) {
		out, err = runKubectl(t, "", "explain", "sidecarset.spec.updateStrategy.partition")
		return err == nil && strings.Contains(out, "partition") && strings.Contains(out, "old version"), fmt.Sprintf("%v\n%s", err, out)
	}); !ok {
		t.Errorf("waited 1m for explain to describe sidecarset.spec.updateStrategy.partition; last seen: %s", last)
	}
	out, err = runKubectl(t, "", "patch", "sidecarset", "test-sidecarset", "--type=strategic",
		"-p", `{"spec":{"containers":[{"name":"sidecar1","image":"centos:7"}]}}`)
	if err != nil {
		t.Fatalf("strategic merge patch: %v\n%s", err, out)
	}
	got, err := sidecars.AppsV1alpha1().SidecarSets().Get(context.Background(), "test-sidecarset", metav1.GetOptions{})
	if err != nil || got.Spec.Containers[0].Image != "centos:7" || len(got.Spec.Containers[0].Command) != 2 {
		t.Errorf("strategic merge patch did not merge sidecar1 by name: %v %+v", err, got.Spec.Containers)
	}
	manifest, err := os.ReadFile(filepath.Join(root, "artifacts/examples/03-sidecarset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = runKubectl(t, string(manifest), "apply", "--server-side", "--field-manager=e2e", "-f", "-")
	if err != nil {
		t.Fatalf("server-side apply: %v\n%s", err, out)
	}
	out, err = runKubectl(t, "", "get", "sidecarset", "sidecarset", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}")
	if err != nil || !strings.Contains(out, "e2e") {
		t.Errorf("managed fields: %v %s", err, out)
	}
}

// TestManualExampleInjection: the manual's first example end to end through kube-apiserver.
func TestManualExampleInjection(t *testing.T) {
	parallelTest(t, fixtureManualExample)
	applyManualExample(t)
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := json.Unmarshal(mustJSON(t, manualPod), pod); err != nil {
		t.Fatal(err)
	}
	for _, dryRun := range [][]string{{metav1.DryRunAll}, nil} {
		var got *corev1.Pod
		eventually(t, fmt.Sprintf("pod %s created (dry-run %v)", pod.Name, dryRun), 30*time.Second, func(ctx context.Context) (bool, string) {
			var err error
			got, err = kube.CoreV1().Pods("default").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: dryRun})
			return err == nil, fmt.Sprintf("create: %v", err)
		})
		if dryRun == nil {
			t.Cleanup(func() { _ = kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}) })
		}
		names := []string{}
		for _, c := range got.Spec.Containers {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != "sidecar1,app" || len(got.Spec.Volumes) != 1 || got.Spec.Volumes[0].Name != "log-volume" {
			t.Errorf("dry-run %v: containers %v volumes %+v", dryRun, names, got.Spec.Volumes)
		}
		if got.Annotations["kruise.io/sidecarset-injected-list"] != "test-sidecarset" {
			t.Errorf("dry-run %v: annotations %v", dryRun, got.Annotations)
		}
	}
}

// TestRestartKeepsSidecarSets restarts the server and its etcd: nothing is lost (reads answer
// ServiceUnavailable until the server sees its etcd back, within seconds).
func TestRestartKeepsSidecarSets(t *testing.T) {
	applyManualExample(t)
	for _, what := range []string{"restart-server", "restart-server-etcd"} {
		if _, err := localUp(what); err != nil {
			t.Fatal(err)
		}
		if last, ok := poll(30*time.Second, func(ctx context.Context) (bool, string) {
			_, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "test-sidecarset", metav1.GetOptions{})
			return err == nil, fmt.Sprintf("get: %v", err)
		}); !ok {
			t.Errorf("after %s, waited 30s for SidecarSet test-sidecarset to be read; last seen: %s", what, last)
		}
	}
}

func mustJSON(t *testing.T, y string) []byte {
	t.Helper()
	data, err := yamlToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
