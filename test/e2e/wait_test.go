package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	controller "github.com/sidecarset/apiserver/pkg/controller/sidecarset"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The wait helpers of the end-to-end tests, in one place: each polls the cluster until a condition
// holds or its timeout passes, and fails the test with what it last saw.

// waitLeader waits until the controller Lease has an unexpired holder and exactly one of the given
// live replicas says in its log that it leads, and returns that replica and the holder identity.
func waitLeader(t *testing.T, replicas []int, timeout time.Duration) (int, string) {
	t.Helper()
	var leaders []int
	var holder string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lease, err := kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil {
			return false, nil
		}
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		expires := lease.Spec.RenewTime.Add(time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second)
		leaders = leaders[:0]
		for _, n := range replicas {
			if leadsByLog(t, n) {
				leaders = append(leaders, n)
			}
		}
		return holder != "" && time.Now().Before(expires) && len(leaders) == 1, nil
	})
	if err != nil {
		t.Fatalf("no single leader among replicas %v: holder %q, replicas whose log says they lead: %v", replicas, holder, leaders)
	}
	return leaders[0], holder
}

func waitLog(t *testing.T, replica int, line string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return strings.Contains(serverLog(t, replica), line), nil
	})
	if err != nil {
		t.Fatalf("replica %d never logged %s", replica, line)
	}
}

// waitSidecarImage waits until every pod of the app runs sidecar1 on image, ready, and returns them.
func waitSidecarImage(t *testing.T, app, image string) []*corev1.Pod {
	t.Helper()
	waitPods(t, app, func(pods []*corev1.Pod) bool {
		for _, p := range pods {
			st := sidecar.ContainerStatus(p, "sidecar1")
			if st == nil || st.Image != image || !st.Ready || !podIsReady(p) {
				return false
			}
		}
		return len(pods) > 0
	})
	return listPods(t, app)
}

// waitMissed waits until the SidecarSet "missed" reports n pods not injected, with its condition.
func waitMissed(t *testing.T, n int32) {
	t.Helper()
	var st v1alpha1.SidecarSetStatus
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "missed", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		st = ss.Status
		c := meta.FindStatusCondition(st.Conditions, controller.ConditionPodsNotInjected)
		return st.NotInjectedPods == n && c != nil && c.Status == metav1.ConditionTrue &&
			strings.Contains(c.Message, fmt.Sprintf("%d %s", n, rollout.ReasonCreatedBefore)), nil
	})
	if err != nil {
		t.Fatalf("status %+v, want notInjectedPods %d with condition %s", st, n, controller.ConditionPodsNotInjected)
	}
}

// waitWorkload waits until the Deployment "web" has exactly `replicas` pods, all running, ready
// and satisfying cond.
func waitWorkload(t *testing.T, replicas int, cond func(*corev1.Pod) bool) {
	t.Helper()
	var summary string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		pods := workloadPods(ctx)
		ok := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && podIsReady(p) && cond(p) {
				ok++
			}
		}
		summary = fmt.Sprintf("%d pods, %d as wanted", len(pods), ok)
		return len(pods) == replicas && ok == replicas, nil
	})
	if err != nil {
		t.Fatalf("the Deployment's pods: %s, want %d", summary, replicas)
	}
}

// waitWebhookLeavesLabels waits until the injection webhook's match condition selects pods by no
// label: only policy-path SidecarSets are stored and their grace period is over, so the webhook
// receives only pods that declare a sidecar's name.
func waitWebhookLeavesLabels(t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "sidecarset-injector-active", metav1.GetOptions{})
		if err != nil || len(cfg.Webhooks) == 0 {
			return false, nil
		}
		for _, w := range cfg.Webhooks {
			if len(w.MatchConditions) != 1 || strings.Contains(w.MatchConditions[0].Expression, "object.metadata.?labels") {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the webhook's match condition still selects pods by label: %v", err)
	}
}

// waitOwnedPolicies waits until the policies the server owns inject n SidecarSets in all, each
// policy with its binding.
func waitOwnedPolicies(t *testing.T, n int) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: policy.ManagedByLabel + "=" + policy.ManagedByValue}
	ar := kube.AdmissionregistrationV1()
	// A thousand SidecarSets take the controller well under a minute on an idle machine; allow for
	// a busy one.
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		ps, err := ar.MutatingAdmissionPolicies().List(ctx, sel)
		if err != nil {
			return false, nil
		}
		served := 0
		for i := range ps.Items {
			recs := map[string]json.RawMessage{}
			if err := json.Unmarshal([]byte(ps.Items[i].Annotations[policy.SidecarSetsAnnotation]), &recs); err != nil {
				return false, nil
			}
			served += len(recs)
		}
		if served != n {
			return false, nil
		}
		bs, err := ar.MutatingAdmissionPolicyBindings().List(ctx, sel)
		return err == nil && len(bs.Items) == len(ps.Items), nil
	})
	if err != nil {
		t.Fatalf("the server's policies do not inject %d SidecarSets: %v", n, err)
	}
}

// waitInjected dry-runs pod until container is injected (kube-apiserver loads new policies
// asynchronously) and returns the admitted pod.
func waitInjected(t *testing.T, pod *corev1.Pod, container string) *corev1.Pod {
	t.Helper()
	return waitInjectedImage(t, pod, container, "")
}

func waitInjectedImage(t *testing.T, pod *corev1.Pod, container, image string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		var err error
		if got, err = createPodDryRun(pod); err != nil {
			return false, nil
		}
		for _, c := range got.Spec.Containers {
			if c.Name == container && (image == "" || c.Image == image) {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s never gets container %s %s: %v", pod.Name, container, image, err)
	}
	return got
}

// waitReady waits until n pods match selector in ns, all running and ready, and returns them
// sorted by name.
func waitReady(t *testing.T, ns, selector string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, nil
		}
		pods, last = nil, ""
		for _, p := range list.Items {
			last += fmt.Sprintf("%s %s ready=%v; ", p.Name, p.Status.Phase, podIsReady(&p))
			if p.DeletionTimestamp == nil && podIsReady(&p) {
				pods = append(pods, p)
			}
		}
		return len(pods) == n && len(list.Items) == n, nil
	})
	if err != nil {
		out, _ := runKubectl(t, "", "-n", ns, "describe", "pods", "-l", selector)
		t.Fatalf("%d ready pods %s: %v; %s\n%s", n, selector, err, last, out)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

func waitNamespaceGone(t *testing.T, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("namespace %s not deleted: %v", ns, err)
	}
}

// waitContainerLog waits until the container's log has every wanted line and returns it.
func waitContainerLog(t *testing.T, pod, container string, want ...string) string {
	t.Helper()
	var log string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		data, err := kube.CoreV1().Pods(realNodeNamespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err != nil {
			return false, nil
		}
		log = string(data)
		for _, w := range want {
			if !hasLine(log, w) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("log of %s/%s lacks %q:\n%s", pod, container, want, log)
	}
	return log
}

// waitGoneUID waits until the pod of that uid no longer exists (a new pod may take its name).
func waitGoneUID(t *testing.T, ns, name string, uid types.UID) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err != nil || p.UID != uid, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not deleted: %v", ns, name, err)
	}
}

// waitPodRunning waits until the pod runs on a node and, if ready, is Ready.
func waitPodRunning(t *testing.T, ns, name string, ready bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || pod.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		return !ready || podIsReady(pod), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not running (ready=%v): %v; status %+v", ns, name, ready, err, pod.Status)
	}
	return pod
}

// waitStatusFor waits until all n pods are matched, updated and ready.
func waitStatusFor(t *testing.T, name string, n int, timeout time.Duration) {
	t.Helper()
	all := int32(n)
	waitStatusWithin(t, name, v1alpha1.SidecarSetStatus{MatchedPods: all, UpdatedPods: all, ReadyPods: all, UpdatedReadyPods: all}, timeout)
}

// waitStatus waits until the SidecarSet observed its generation and has the wanted counters.
func waitStatus(t *testing.T, name string, want v1alpha1.SidecarSetStatus) {
	t.Helper()
	waitStatusWithin(t, name, want, rolloutTimeout)
}

func waitStatusWithin(t *testing.T, name string, want v1alpha1.SidecarSetStatus, timeout time.Duration) {
	t.Helper()
	waitStatusOn(t, sidecars, name, want, timeout)
}

// waitStatusOn is waitStatusWithin through the given client (e.g. one server replica directly).
func waitStatusOn(t *testing.T, client clientset.Interface, name string, want v1alpha1.SidecarSetStatus, timeout time.Duration) {
	t.Helper()
	var got v1alpha1.SidecarSetStatus
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ss, err := client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		got = ss.Status
		return ss.Status.ObservedGeneration == ss.Generation && got.MatchedPods == want.MatchedPods && got.UpdatedPods == want.UpdatedPods &&
			got.ReadyPods == want.ReadyPods && got.UpdatedReadyPods == want.UpdatedReadyPods, nil
	})
	if err != nil {
		t.Fatalf("SidecarSet %s status %+v, want matched/updated/ready/updatedReady %d/%d/%d/%d", name, got,
			want.MatchedPods, want.UpdatedPods, want.ReadyPods, want.UpdatedReadyPods)
	}
}

func waitPod(t *testing.T, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pod, err = kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(pod), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: %v; status %+v", ns, name, err, pod.Status)
	}
	return pod
}

func waitPods(t *testing.T, app string, cond func([]*corev1.Pod) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, rolloutTimeout, true, func(ctx context.Context) (bool, error) {
		return cond(listPods(t, app)), nil
	})
	if err != nil {
		t.Fatalf("pods app=%s: %v", app, err)
	}
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not deleted: %v", ns, name, err)
	}
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
		t.Fatalf("SidecarSet %s not settled: %v\n%s", name, err, settleDiagnostics(ss))
	}
	return ss
}
