package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

const missedNamespace = "sidecarset-missed"

// TestMissedInjectionRepair: pods created before their SidecarSet (three of a Deployment and a
// bare one) are counted in status.notInjectedPods, listed as NotInjected with the reason in the
// rollout view, exported as sidecarset_pods_not_injected and reported by the PodsNotInjected
// condition. Annotated apps.kruise.io/repair-not-injected=true, the SidecarSet has the
// Deployment's pods evicted, never more than maxUnavailable (1) of them missing or unready at a
// sampled moment, and they come back injected; the bare pod is left alone.
func TestMissedInjectionRepair(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	startOver(t, missedNamespace, "", "missed")
	labels := map[string]string{"app": "missed"}
	spec := corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: missedNamespace},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
	if _, err := kube.AppsV1().Deployments(missedNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: missedNamespace, Labels: labels}, Spec: spec}
	if bare, err := kube.CoreV1().Pods(missedNamespace).Create(ctx, bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	} else {
		t.Cleanup(func() { cleanNamespace(t, missedNamespace) })
		waitWorkload(t, 3, func(p *corev1.Pod) bool { return !hasContainer(p, "sidecar1") })
		defer checkBareLeftAlone(t, bare.UID)
	}

	nextSecond()
	ss := simpleSidecarSet("missed", "busybox:1.36", ptr.To(intstr.FromInt32(1)))
	if err := applySidecarSet(t, ss); err != nil {
		t.Fatal(err)
	}
	waitMissed(t, 4)
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "missed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, p := range view.Status.Pods {
		if p.State == v1alpha1.PodRolloutNotInjected && p.Reason == "CreatedBeforeSidecarSet" && p.Namespace == missedNamespace {
			listed++
		}
	}
	if listed != 4 {
		t.Errorf("the rollout view lists %d pods NotInjected/CreatedBeforeSidecarSet, want 4: %+v", listed, view.Status.Pods)
	}
	checkExplainAgrees(t, "CreatedBeforeSidecarSet")
	if m := serverMetrics(t); !strings.Contains(m, `sidecarset_pods_not_injected{sidecarset="missed"} 4`) {
		t.Errorf("sidecarset_pods_not_injected: %s", grepLines(m, "sidecarset_pods_not_injected"))
	}

	missed := map[types.UID]bool{} // the Deployment's pods, each to be evicted once
	for _, p := range workloadPods(ctx) {
		missed[p.UID] = true
	}
	stop := sampleWorkloadUnavailable(3)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, rollout.RepairAnnotation)
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Patch(ctx, "missed", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWorkload(t, 3, func(p *corev1.Pod) bool { return hasContainer(p, "sidecar1") })
	waitMissed(t, 1)
	if w := stop(); w > 1 {
		t.Errorf("%d of the Deployment's pods were missing or unready at once, maxUnavailable is 1", w)
	} else {
		t.Logf("at most %d of the Deployment's 3 pods missing or unready at a sampled moment", w)
	}
	events, err := kube.CoreV1().Events(missedNamespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=EvictedNotInjected"})
	if err != nil {
		t.Fatal(err)
	}
	evicted := map[types.UID]int32{} // events of earlier runs (they live an hour) name other pods
	for _, e := range events.Items {
		if missed[e.InvolvedObject.UID] {
			evicted[e.InvolvedObject.UID] += max(e.Count, 1)
		}
	}
	if len(evicted) != 3 {
		t.Errorf("EvictedNotInjected events on %d of the Deployment's 3 pods: %v", len(evicted), evicted)
	}
	for uid, n := range evicted {
		if n != 1 {
			t.Errorf("pod %s evicted %d times", uid, n)
		}
	}
}

// workloadPods lists the pods a controller owns in the namespace.
func workloadPods(ctx context.Context) []*corev1.Pod {
	list, err := kube.CoreV1().Pods(missedNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=missed"})
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for i := range list.Items {
		if metav1.GetControllerOf(&list.Items[i]) != nil {
			out = append(out, &list.Items[i])
		}
	}
	return out
}

// sampleWorkloadUnavailable samples, four times a second, how many of the Deployment's `replicas`
// pods are missing, terminating or not ready; stop ends it and returns the largest number seen.
func sampleWorkloadUnavailable(replicas int) func() int {
	var mu sync.Mutex
	worst := 0
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			available := 0
			for _, p := range workloadPods(context.Background()) {
				if p.DeletionTimestamp == nil && podIsReady(p) {
					available++
				}
			}
			mu.Lock()
			worst = max(worst, replicas-available)
			mu.Unlock()
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return worst
	}
}

// checkBareLeftAlone asserts that the bare pod is still the same pod, not injected.
func checkBareLeftAlone(t *testing.T, uid types.UID) {
	t.Helper()
	p, err := kube.CoreV1().Pods(missedNamespace).Get(context.Background(), "bare", metav1.GetOptions{})
	if err != nil || p.UID != uid || p.DeletionTimestamp != nil || hasContainer(p, "sidecar1") {
		t.Errorf("the bare pod was touched: %v", err)
	}
}

// checkExplainAgrees checks that kubectl sidecarset explain names, for each pod of the missed
// namespace, the reason the /rollout view names for it: want.
func checkExplainAgrees(t *testing.T, want string) {
	t.Helper()
	stdout, errOut, err := plugin(t, "explain", "-l", "app=missed", "-n", missedNamespace, "-o", "json")
	if err != nil {
		t.Fatalf("explain: %v\n%s%s", err, stdout, errOut)
	}
	var reports []struct {
		Name        string                                `json:"name"`
		SidecarSets []struct{ SidecarSet, Reason string } `json:"sidecarSets"`
	}
	if err := json.Unmarshal([]byte(stdout), &reports); err != nil {
		t.Fatalf("explain output: %v\n%s", err, stdout)
	}
	if len(reports) != 4 {
		t.Fatalf("explain reports %d pods, want 4:\n%s", len(reports), stdout)
	}
	for _, r := range reports {
		for _, e := range r.SidecarSets {
			if e.SidecarSet == "missed" && e.Reason != want {
				t.Errorf("explain %s: reason %q, want %q as the /rollout view", r.Name, e.Reason, want)
			}
		}
	}
}
