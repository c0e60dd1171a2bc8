package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestNamespaceDeletionStallReported stops this server and its etcd, then deletes a namespace
// holding a pod: kube-controller-manager's namespace controller cannot discover the server's
// group versions, so the namespace stays Terminating with the condition
// NamespaceDeletionDiscoveryFailure naming them (its pod is deleted meanwhile), and `kubectl
// sidecarset check` names it (finding namespace-deletion, an error: exit 1) with how long and the
// fix. Once the server is back, the namespace goes. Serial: it stops the server (hack/e2e.sh runs
// it in a serial shard).
func TestNamespaceDeletionStallReported(t *testing.T) {
	serialOnly(t, "stopping the server")
	ctx := context.Background()
	ns := fmt.Sprintf("e2e-outage-%d", time.Now().UnixNano()%1e6)
	setNamespace(t, ns, nil)
	// A pod nothing selects: the namespace holds content the controller must delete.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{"e2e-outage": "app"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.15.1"}}, AutomountServiceAccountToken: new(bool)}}
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	started := false
	defer func() {
		if !started {
			_, _ = localUp("start-server")
		}
	}()
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "namespace "+ns+" Terminating with NamespaceDeletionDiscoveryFailure naming apps.kruise.io", 2*time.Minute, func(ctx context.Context) (bool, string) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				return n.Status.Phase == corev1.NamespaceTerminating && strings.Contains(c.Message, "apps.kruise.io"),
					fmt.Sprintf("phase %s, condition %s: %s", n.Status.Phase, c.Reason, c.Message)
			}
		}
		return false, fmt.Sprintf("phase %s, conditions %+v", n.Status.Phase, n.Status.Conditions)
	})
	// The controller deletes what it can discover: the pod goes, the Namespace stays.
	waitGone(t, ns, pod.Name)
	if n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil || n.Status.Phase != corev1.NamespaceTerminating {
		t.Fatalf("namespace %s once its pod is gone, with the server down: %v, want it Terminating", ns, err)
	}

	// Every second: each try runs the plugin. kube-apiserver marks the APIServices unavailable
	// within its availability check's period.
	var report checkOutput
	var out string
	var err error
	if last, ok := pollEvery(time.Second, 2*time.Minute, func(context.Context) (bool, string) {
		report, out, err = runCheck(t)
		status, msg := report.status(v1alpha1.FindingNamespaceDeletion)
		return exitCode(err) == 1 && status == "error" && strings.Contains(msg, ns), fmt.Sprintf("exit %d, namespace-deletion %s %q\n%s", exitCode(err), status, msg, out)
	}); !ok {
		t.Fatalf("waited 2m for check to name namespace %s stuck Terminating (finding namespace-deletion, an error, exit 1); last seen: %s", ns, last)
	}
	_, msg := report.status(v1alpha1.FindingNamespaceDeletion)
	category, hint, docs := report.find(v1alpha1.FindingNamespaceDeletion)
	if !strings.Contains(msg, "NamespaceDeletionDiscoveryFailure") || !strings.Contains(msg, "Terminating for") ||
		category != "sidecarset-apiserver" || !strings.Contains(hint, "start the server") || !strings.HasSuffix(docs, "docs/plugin.md#sidecarset-apiserver") {
		t.Errorf("namespace-deletion: message %q, category %q, hint %q, docs %q: want the condition, how long, the fix and the docs anchor", msg, category, hint, docs)
	}
	t.Logf("check with the server down:\n%s", out)

	if _, err := localUp("start-server"); err != nil {
		t.Fatal(err)
	}
	started = true
	start := time.Now()
	eventually(t, "namespace "+ns+" deleted once the server is back", 2*time.Minute, func(ctx context.Context) (bool, string) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("phase %s, conditions %+v", n.Status.Phase, n.Status.Conditions)
	})
	t.Logf("namespace %s deleted %s after the server was back", ns, time.Since(start).Round(time.Second))
	eventuallyEvery(t, "check to report no namespace stuck", time.Second, time.Minute, func(context.Context) (bool, string) {
		report, out, _ = runCheck(t)
		status, msg := report.status(v1alpha1.FindingNamespaceDeletion)
		return status == "ok", fmt.Sprintf("namespace-deletion %s %q\n%s", status, msg, out)
	})
}
