package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// TestEtcdOutage stops this server's etcd with the webhook injecting (webhook mode): matching pods
// are still injected from the server's caches, /readyz and /livez stay healthy, SidecarSet writes
// fail at once with a clear ServiceUnavailable error and succeed again by themselves once etcd is
// back, and the server process is never restarted.
func TestEtcdOutage(t *testing.T) {
	restartServer(t, "webhook")
	defer restartServer(t, "policy")
	applyManualExample(t)
	pid := serverPID(t, 1)
	pod := nginxPod("default", fmt.Sprintf("etcd-outage-%d", time.Now().UnixNano()))
	waitInjected(t, pod, "sidecar1")

	if _, err := localUp("stop-server-etcd"); err != nil {
		t.Fatal(err)
	}
	etcdUp := false
	defer func() {
		if !etcdUp {
			_, _ = localUp("start-server-etcd")
		}
	}()
	ctx := context.Background()
	var writeErr error
	eventually(t, "a SidecarSet write during the outage to return ServiceUnavailable", 30*time.Second, func(ctx context.Context) (bool, string) {
		writeErr = labelSidecarSet(ctx, "outage", "1")
		return apierrors.IsServiceUnavailable(writeErr), fmt.Sprintf("write: %v", writeErr)
	})
	if !strings.Contains(writeErr.Error(), "storage (etcd) is unavailable") {
		t.Errorf("unclear error: %v", writeErr)
	}
	start := time.Now()
	if err := labelSidecarSet(ctx, "outage", "2"); !apierrors.IsServiceUnavailable(err) || time.Since(start) > 5*time.Second {
		t.Errorf("a write during the outage took %s and returned %v: want an immediate ServiceUnavailable", time.Since(start), err)
	}
	direct := kubernetes.NewForConfigOrDie(serverConfig(1))
	for _, path := range []string{"/readyz", "/livez"} {
		if body, err := direct.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx); err != nil {
			t.Errorf("%s during the etcd outage: %v %s", path, err, body)
		}
	}
	pod.Name += "-during"
	got, err := createPodDryRun(pod)
	if err != nil || !hasContainer(got, "sidecar1") {
		t.Fatalf("a matching pod during the etcd outage: err %v, injected %v", err, got != nil && hasContainer(got, "sidecar1"))
	}

	if _, err := localUp("start-server-etcd"); err != nil {
		t.Fatal(err)
	}
	etcdUp = true
	eventually(t, "SidecarSet writes to recover after etcd is back", time.Minute, func(ctx context.Context) (bool, string) {
		err := labelSidecarSet(ctx, "outage", "over")
		return err == nil, fmt.Sprintf("write: %v", err)
	})
	if now := serverPID(t, 1); now != pid {
		t.Errorf("the server process was restarted during the outage: pid %d then %d", pid, now)
	}
}

// TestKubeSystemInjection: pods in kube-system are injected, by the webhook (failurePolicy
// Ignore there) and by policies; pods in the server's own namespace never are.
func TestKubeSystemInjection(t *testing.T) {
	defer restartServer(t, "policy")
	for _, mode := range []string{"webhook", "policy"} {
		t.Run(mode, func(t *testing.T) {
			restartServer(t, mode)
			applyManualExample(t)
			waitInjected(t, nginxPod("kube-system", "system-"+mode), "sidecar1")
			own := nginxPod(serverNamespace, "own-"+mode)
			// Once a pod in kube-system is injected, the injection objects are in effect.
			got, err := createPodDryRun(own)
			if err != nil {
				t.Fatal(err)
			}
			if hasContainer(got, "sidecar1") {
				t.Errorf("a pod in the server's own namespace was injected")
			}
		})
	}
}

func nginxPod(namespace, name string) *corev1.Pod {
	pod := &corev1.Pod{}
	pod.Name, pod.Namespace, pod.Labels = name, namespace, map[string]string{"app": "nginx"}
	pod.Spec.Containers = []corev1.Container{{Name: "app", Image: "nginx:1.15.1"}}
	pod.Spec.AutomountServiceAccountToken = new(bool)
	return pod
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// labelSidecarSet sets a label on the manual's SidecarSet through kube-apiserver.
func labelSidecarSet(ctx context.Context, key, value string) error {
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	_, err := sidecars.AppsV1alpha1().SidecarSets().Patch(ctx, "test-sidecarset", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	return err
}

// TestKubeSystemFailsOpen stops this server in webhook mode: a pod in kube-system is still created
// (its webhook's failurePolicy is Ignore) but without its sidecars, while a pod elsewhere is
// refused (Fail). Once the server is back, the pod admitted without injection is reported: an
// event NotInjected on it, the metric sidecarset_pods_not_injected and the rollout view's entry.
func TestKubeSystemFailsOpen(t *testing.T) {
	restartServer(t, "webhook")
	defer restartServer(t, "policy")
	applyManualExample(t)
	ctx := context.Background()
	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	started := false
	defer func() {
		if !started {
			_, _ = localUp("start-server")
		}
	}()
	if _, err := createPodDryRun(nginxPod("default", "fail-closed")); err == nil {
		t.Error("a matching pod in default was created while the injection webhook was down (failurePolicy Fail)")
	}
	pod := nginxPod("kube-system", fmt.Sprintf("fail-open-%d", time.Now().UnixNano()))
	created, err := kube.CoreV1().Pods("kube-system").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod in kube-system while the injection webhook is down: %v", err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = kube.CoreV1().Pods("kube-system").Delete(ctx, created.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	if hasContainer(created, "sidecar1") {
		t.Fatal("the pod was injected although the server is down")
	}
	if _, err := localUp("start-server"); err != nil {
		t.Fatal(err)
	}
	started = true
	eventually(t, "a NotInjected event naming test-sidecarset on the pod admitted without injection", time.Minute, func(ctx context.Context) (bool, string) {
		events, err := kube.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + created.Name + ",reason=NotInjected"})
		if err != nil {
			return false, err.Error()
		}
		if len(events.Items) == 0 {
			return false, "no event"
		}
		return strings.Contains(events.Items[0].Message, "test-sidecarset"), "event: " + events.Items[0].Message
	})
	direct := kubernetes.NewForConfigOrDie(serverConfig(1))
	metricsText, err := direct.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`sidecarset_pods_not_injected\{sidecarset="test-sidecarset"\} [1-9]`).Match(metricsText) {
		t.Errorf("metric sidecarset_pods_not_injected missing or 0: %s", grepLines(string(metricsText), "sidecarset_pods_not_injected"))
	}
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "test-sidecarset", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, p := range view.Status.Pods {
		listed = listed || p.Namespace == "kube-system" && p.Name == created.Name && p.State == v1alpha1.PodRolloutNotInjected &&
			p.Reason == rollout.ReasonAdmittedWithout
	}
	if !listed {
		t.Errorf("the rollout view does not list pod %s as NotInjected/%s: %+v", created.Name, rollout.ReasonAdmittedWithout, view.Status.Pods)
	}
}

// TestNotLoadedFailsSafe starts this server again while its etcd is down: it cannot load its
// SidecarSets (nor, after a while, start at all), so it is never ready and every injection call
// fails rather than denies, and each class of namespace gets its failurePolicy. Throughout, a
// kube-system pod is created without its sidecars (Ignore), an application pod a SidecarSet
// selects is refused with a message that says why (Fail), and a pod nothing selects is never
// refused: the webhooks the server wrote before do not send it.
func TestNotLoadedFailsSafe(t *testing.T) {
	restartServer(t, "webhook")
	defer restartServer(t, "policy")
	applyManualExample(t)
	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// The server started without its etcd gives up on its storage, or is still trying: stop it
		// and start both afresh.
		_, _ = localUp("stop-server")
		_, _ = localUp("start-server")
	}()
	if _, err := localUp("start-server-alone"); err != nil {
		t.Fatal(err)
	}
	direct := kubernetes.NewForConfigOrDie(serverConfig(1))
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// What is tested: throughout; the server gives up on its storage after about 20 s. Each look
	// makes four calls, each of which may wait for a failing webhook call's timeout.
	ctx := context.Background()
	consistently(t, "pods admitted as if the server had no SidecarSets", 8*time.Second, 25*time.Second, func(context.Context) (bool, string) {
		if _, err := direct.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
			return false, "the server reports ready without its SidecarSets"
		}
		if _, err := kube.CoreV1().Pods("default").Create(ctx, nginxPod("default", "refused"), dry); err == nil ||
			!strings.Contains(err.Error(), "sidecarinjection") {
			return false, fmt.Sprintf("a pod a SidecarSet selects was not refused by the failing webhook call: %v", err)
		}
		other := nginxPod("default", "selected-by-none")
		other.Labels = map[string]string{"app": "selected-by-none"}
		if _, err := kube.CoreV1().Pods("default").Create(ctx, other, dry); err != nil {
			return false, fmt.Sprintf("a pod nothing selects was refused: %v", err)
		}
		created, err := kube.CoreV1().Pods("kube-system").Create(ctx, nginxPod("kube-system", "not-loaded"), dry)
		if err != nil {
			return false, fmt.Sprintf("a kube-system pod was refused while the server cannot load its SidecarSets: %v", err)
		}
		if hasContainer(created, "sidecar1") {
			return false, "the kube-system pod was injected although the server has no SidecarSets loaded"
		}
		return true, ""
	})
}

// TestShippedWebhooksSelectNoPod applies the shipped webhook configuration as it is (under another
// name, its calls sent to a path nothing serves, so that a call would fail and, in application
// namespaces, refuse the pod): until a server writes its selection, it sends no pod anywhere, so
// installing the manifests before the server can start refuses no pod.
func TestShippedWebhooksSelectNoPod(t *testing.T) {
	applyManualExample(t)
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(root, "artifacts/deploy/base/webhook.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := strings.ReplaceAll(string(data), "name: sidecarset-injector", "name: e2e-shipped-webhooks")
	shipped = strings.ReplaceAll(shipped, "/apis/admission.kruise.io/v1/sidecarinjections", "/apis/admission.kruise.io/v1/nothing-here")
	if out, err := runKubectl(t, shipped, "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = runKubectl(t, "", "delete", "mutatingwebhookconfiguration", "e2e-shipped-webhooks") })
	kubeAPIServerLoads() // the webhook configuration
	for _, ns := range []string{"default", "kube-system"} {
		pod := nginxPod(ns, "shipped-webhooks")
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("a pod in %s was refused while the shipped webhooks are installed: %v", ns, err)
		}
	}
}
