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
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/condition"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The domain waits of the end-to-end tests, in one place, each built on eventually (phase_test.go):
// it polls until the condition holds or the timeout passes, and fails the test with what it
// waited for and the state it saw last.

// waitLeader waits until the controller Lease has an unexpired holder and exactly one of the given
// live replicas says in its log that it leads, and returns that replica and the holder identity.
func waitLeader(t *testing.T, replicas []int, timeout time.Duration) (int, string) {
	t.Helper()
	var leaders []int
	var holder string
	eventually(t, fmt.Sprintf("a single leader among replicas %v", replicas), timeout, func(ctx context.Context) (bool, string) {
		lease, err := kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.RenewTime == nil {
			return false, fmt.Sprintf("lease: %v", err)
		}
		holder = ptr.Deref(lease.Spec.HolderIdentity, "")
		expires := lease.Spec.RenewTime.Add(time.Duration(ptr.Deref(lease.Spec.LeaseDurationSeconds, 0)) * time.Second)
		leaders = leaders[:0]
		for _, n := range replicas {
			if leadsByLog(t, n) {
				leaders = append(leaders, n)
			}
		}
		return holder != "" && time.Now().Before(expires) && len(leaders) == 1,
			fmt.Sprintf("holder %q, expires %v, replicas whose log says they lead: %v", holder, expires, leaders)
	})
	return leaders[0], holder
}

func waitLog(t *testing.T, replica int, line string, timeout time.Duration) {
	t.Helper()
	eventually(t, fmt.Sprintf("replica %d to log %s", replica, line), timeout, func(context.Context) (bool, string) {
		return strings.Contains(serverLog(t, replica), line), "not in its log"
	})
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
	eventually(t, fmt.Sprintf("notInjectedPods %d with condition %s", n, condition.PodsNotInjected), rolloutTimeout,
		func(ctx context.Context) (bool, string) {
			ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "missed", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			st := ss.Status
			c := meta.FindStatusCondition(st.Conditions, condition.PodsNotInjected)
			return st.NotInjectedPods == n && c != nil && c.Status == metav1.ConditionTrue &&
				strings.Contains(c.Message, fmt.Sprintf("%d %s", n, rollout.ReasonCreatedBefore)), fmt.Sprintf("status %+v", st)
		})
}

// waitWorkload waits until the Deployment "web" has exactly `replicas` pods, all running, ready
// and satisfying cond.
func waitWorkload(t *testing.T, replicas int, cond func(*corev1.Pod) bool) {
	t.Helper()
	eventually(t, fmt.Sprintf("the Deployment's %d pods ready as wanted", replicas), rolloutTimeout, func(ctx context.Context) (bool, string) {
		pods := workloadPods(ctx)
		ok := 0
		for _, p := range pods {
			if p.DeletionTimestamp == nil && podIsReady(p) && cond(p) {
				ok++
			}
		}
		return len(pods) == replicas && ok == replicas, fmt.Sprintf("%d pods, %d as wanted", len(pods), ok)
	})
}

// waitWebhookLeavesLabels waits until the injection webhook's match condition selects pods by no
// label: only policy-path SidecarSets are stored and their grace period is over, so the webhook
// receives only pods that declare a sidecar's name.
func waitWebhookLeavesLabels(t *testing.T) {
	t.Helper()
	eventually(t, "the webhook's match condition to select pods by no label", time.Minute, func(ctx context.Context) (bool, string) {
		cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "sidecarset-injector-active", metav1.GetOptions{})
		if err != nil || len(cfg.Webhooks) == 0 {
			return false, fmt.Sprintf("configuration: %v", err)
		}
		for _, w := range cfg.Webhooks {
			if len(w.MatchConditions) != 1 || strings.Contains(w.MatchConditions[0].Expression, "object.metadata.?labels") {
				return false, fmt.Sprintf("webhook %s match conditions %d", w.Name, len(w.MatchConditions))
			}
		}
		return true, ""
	})
}

// waitOwnedPolicies waits until the policies the server owns inject n SidecarSets in all, each
// policy with its binding.
func waitOwnedPolicies(t *testing.T, n int) {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: apps.ManagedByLabel + "=" + apps.ManagedByValue}
	ar := kube.AdmissionregistrationV1()
	// A thousand SidecarSets take the controller well under a minute on an idle machine; allow for
	// a busy one.
	eventually(t, fmt.Sprintf("the server's policies to inject %d SidecarSets", n), 5*time.Minute, func(ctx context.Context) (bool, string) {
		ps, err := ar.MutatingAdmissionPolicies().List(ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		served := 0
		for i := range ps.Items {
			recs := map[string]json.RawMessage{}
			if err := json.Unmarshal([]byte(ps.Items[i].Annotations[apps.SidecarSetsAnnotation]), &recs); err != nil {
				return false, err.Error()
			}
			served += len(recs)
		}
		if served != n {
			return false, fmt.Sprintf("%d policies inject %d", len(ps.Items), served)
		}
		bs, err := ar.MutatingAdmissionPolicyBindings().List(ctx, sel)
		return err == nil && len(bs.Items) == len(ps.Items), fmt.Sprintf("%d policies, bindings: %v", len(ps.Items), err)
	})
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
	eventually(t, fmt.Sprintf("pod %s to get container %s %s", pod.Name, container, image), time.Minute, func(context.Context) (bool, string) {
		var err error
		if got, err = createPodDryRun(pod); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, c := range got.Spec.Containers {
			if c.Name == container && (image == "" || c.Image == image) {
				return true, ""
			}
			names = append(names, c.Name+"="+c.Image)
		}
		return false, "containers " + strings.Join(names, ", ")
	})
	return got
}

// waitReady waits until n pods match selector in ns, all running and ready, and returns them
// sorted by name.
func waitReady(t *testing.T, ns, selector string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	last, ok := poll(timeout, func(ctx context.Context) (bool, string) {
		list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		pods = nil
		var seen []string
		for _, p := range list.Items {
			seen = append(seen, fmt.Sprintf("%s %s ready=%v", p.Name, p.Status.Phase, podIsReady(&p)))
			if p.DeletionTimestamp == nil && podIsReady(&p) {
				pods = append(pods, p)
			}
		}
		return len(pods) == n && len(list.Items) == n, strings.Join(seen, "; ")
	})
	if !ok { // the pods' events say why they are not ready: describe them
		out, _ := runKubectl(t, "", "-n", ns, "describe", "pods", "-l", selector)
		t.Fatalf("%d ready pods %s: %s\n%s", n, selector, last, out)
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods
}

func waitNamespaceGone(t *testing.T, ns string) {
	t.Helper()
	eventually(t, "namespace "+ns+" deleted", 3*time.Minute, func(ctx context.Context) (bool, string) {
		n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("%v %+v", err, n.Status)
	})
}

// waitContainerLog waits until the container's log has every wanted line and returns it.
func waitContainerLog(t *testing.T, pod, container string, want ...string) string {
	t.Helper()
	var log string
	eventually(t, fmt.Sprintf("log of %s/%s to have %q", pod, container, want), 30*time.Second, func(ctx context.Context) (bool, string) {
		data, err := kube.CoreV1().Pods(realNodeNamespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		if err != nil {
			return false, err.Error()
		}
		log = string(data)
		for _, w := range want {
			if !hasLine(log, w) {
				return false, log
			}
		}
		return true, ""
	})
	return log
}

// waitGoneUID waits until the pod of that uid no longer exists (a new pod may take its name).
func waitGoneUID(t *testing.T, ns, name string, uid types.UID) {
	t.Helper()
	eventually(t, fmt.Sprintf("pod %s/%s (uid %s) deleted", ns, name, uid), rolloutTimeout, func(ctx context.Context) (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err != nil || p.UID != uid, "still there"
	})
}

// waitPodRunning waits until the pod runs on a node and, if ready, is Ready.
func waitPodRunning(t *testing.T, ns, name string, ready bool) *corev1.Pod {
	t.Helper()
	return waitPod(t, ns, name, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && (!ready || podIsReady(p))
	})
}

// waitStatus waits until the SidecarSet observed its generation and has the wanted counters.
func waitStatus(t *testing.T, name string, want v1alpha1.SidecarSetStatus) {
	t.Helper()
	waitStatusOn(t, sidecars, name, want, rolloutTimeout)
}

// waitStatusFor waits until all n pods are matched, updated and ready.
func waitStatusFor(t *testing.T, name string, n int, timeout time.Duration) {
	t.Helper()
	all := int32(n)
	waitStatusOn(t, sidecars, name, v1alpha1.SidecarSetStatus{MatchedPods: all, UpdatedPods: all, ReadyPods: all, UpdatedReadyPods: all}, timeout)
}

// waitStatusOn waits, through client (e.g. one server replica directly), until the SidecarSet
// observed its generation and has the wanted counters.
func waitStatusOn(t *testing.T, client clientset.Interface, name string, want v1alpha1.SidecarSetStatus, timeout time.Duration) {
	t.Helper()
	what := fmt.Sprintf("SidecarSet %s matched/updated/ready/updatedReady %d/%d/%d/%d", name,
		want.MatchedPods, want.UpdatedPods, want.ReadyPods, want.UpdatedReadyPods)
	eventually(t, what, timeout, statusIs(client, name, want))
}

// statusIs is the condition that the SidecarSet's status has observed its generation and has
// want's matched, updated, ready and updatedReady counts.
func statusIs(client clientset.Interface, name string, want v1alpha1.SidecarSetStatus) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		ss, err := client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := ss.Status
		return ss.Status.ObservedGeneration == ss.Generation && got.MatchedPods == want.MatchedPods && got.UpdatedPods == want.UpdatedPods &&
			got.ReadyPods == want.ReadyPods && got.UpdatedReadyPods == want.UpdatedReadyPods, fmt.Sprintf("generation %d, status %+v", ss.Generation, got)
	}
}

func waitPod(t *testing.T, ns, name string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, fmt.Sprintf("pod %s/%s as wanted", ns, name), rolloutTimeout, func(ctx context.Context) (bool, string) {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p), fmt.Sprintf("phase %s, conditions %+v, containers %+v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return pod
}

func waitPods(t *testing.T, app string, cond func([]*corev1.Pod) bool) {
	t.Helper()
	eventually(t, "pods app="+app+" as wanted", rolloutTimeout, func(context.Context) (bool, string) {
		pods := listPods(t, app)
		return cond(pods), fmt.Sprintf("%d pods", len(pods))
	})
}

func waitGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, fmt.Sprintf("pod %s/%s deleted", ns, name), time.Minute, func(ctx context.Context) (bool, string) {
		_, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("get: %v", err)
	})
}

// waitSettled waits until the controller observed the SidecarSet's generation.
func waitSettled(t *testing.T, name string) *v1alpha1.SidecarSet {
	t.Helper()
	var ss *v1alpha1.SidecarSet
	last, ok := poll(90*time.Second, func(ctx context.Context) (bool, string) {
		got, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ss = got
		return ss.Status.ObservedGeneration == ss.Generation, fmt.Sprintf("generation %d observed %d", ss.Generation, ss.Status.ObservedGeneration)
	})
	if !ok {
		t.Fatalf("SidecarSet %s not settled: %s\n%s", name, last, settleDiagnostics(ss))
	}
	return ss
}
