package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The tests of this file put an administrator's cluster SidecarSet, at maxUnavailable 1, over the
// pods of two namespaces; a namespace editor (bound to edit in team-a alone) does the worst it can
// with its own pods and PodDisruptionBudgets. The rollout must reach team-b's pods all the same,
// promptly: budgetRolloutTimeout is a few rounds of kwok's in-place restart (1 s), far below the
// controller's 5-minute expectation and eviction timeouts that held rollouts before.
const budgetRolloutTimeout = 90 * time.Second

// TestTenantCannotHoldTheBudget: the editor's pods that are never available (one that no node
// can take, Pending for ever; one whose readiness probe always fails) are upgraded without the
// budget and hold no place of it afterwards: team-b's three pods are upgraded one at a time, never
// more than one unavailable at once.
func TestTenantCannotHoldTheBudget(t *testing.T) {
	parallelTest(t)
	teamA, teamB := tempNamespace(t, "e2e-budget-a-"), tempNamespace(t, "e2e-budget-b-")
	editor := namespaceEditorKube(t, "e2e-budget-editor", teamA)
	const name, app = "e2e-budget-hold", "e2e-budget-hold"
	ss := simpleSidecarSet(name, "busybox:1.36", ptr.To(intstr.FromInt32(1)))
	createClusterSidecarSet(t, ss)

	pending := budgetPod("pending", teamA, app)
	pending.Spec.NodeSelector = map[string]string{"e2e.sidecarset.dev/no-such-node": "true"}
	unready := budgetPod("unready", teamA, app)
	unready.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}
	for _, p := range []*corev1.Pod{pending, unready} {
		if _, err := editor.CoreV1().Pods(teamA).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the editor creates pod %s: %v", p.Name, err)
		}
	}
	for i := range 3 {
		if _, err := kube.CoreV1().Pods(teamB).Create(context.Background(), budgetPod(fmt.Sprintf("b-%d", i), teamB, app), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		mustHaveSidecar(t, waitPodRunning(t, teamB, fmt.Sprintf("b-%d", i), true))
	}
	mustHaveSidecar(t, waitPodRunning(t, teamA, "unready", false))
	p, err := kube.CoreV1().Pods(teamA).Get(context.Background(), "pending", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mustHaveSidecar(t, p); p.Spec.NodeName != "" {
		t.Fatalf("pod %s was scheduled to %s", p.Name, p.Spec.NodeName)
	}
	waitStatus(t, name, v1alpha1.SidecarSetStatus{MatchedPods: 5, UpdatedPods: 5, ReadyPods: 3, UpdatedReadyPods: 3})

	stop := sampleUnavailable(teamB, "app="+app)
	patchImage(t, name, `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	eventually(t, "team-b's pods upgraded past the editor's pods", budgetRolloutTimeout, func(ctx context.Context) (bool, string) {
		return upgradedIn(ctx, teamB, app, "busybox:1.37", 3)
	})
	if worst := stop(); worst > 1 {
		t.Errorf("%d of team-b's pods were unavailable at once, maxUnavailable is 1", worst)
	}
	// The editor's pods were upgraded too (they cost nothing), and say why they hold no place.
	for _, p := range []string{"pending", "unready"} {
		got, err := kube.CoreV1().Pods(teamA).Get(context.Background(), p, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := sidecar.FindPodContainer(got, "sidecar1").Image; img != "busybox:1.37" {
			t.Errorf("pod %s: sidecar1 spec image %s, want busybox:1.37", p, img)
		}
		if st := sidecar.UpgradeStates(got.Annotations[sidecar.UpgradeStateAnnotation])[name]; !st.NotReadyBefore {
			t.Errorf("pod %s: upgrade state %+v, want it marked not ready before its upgrade", p, st)
		}
	}
}

// TestTenantHoldsOnlyItsShare: the cluster SidecarSet, at maxUnavailable 2, over the editor's two
// pods in team-a and four pods in team-b. The editor annotates its pods so that the fake kubelet
// (kwok) never restarts an upgraded sidecar in them (kwok.x-k8s.io/image-change-delay 1h): once
// upgraded they are never available again, as pods whose namespace breaks the new sidecar (their
// readiness, a config or a NetworkPolicy it meets there). They were ready before their upgrade, so
// each holds a place; they became ready last, so they come first in the upgrade order. Without
// namespace shares both took the two places and team-b's rollout stalled for as long as they
// existed. With them, team-a holds its share, max(1, min(2-1, ceil(2*2/6))) = 1 place: its other
// pod waits (NamespaceShare) while team-b's pods are upgraded on the other place, never more than
// 2 of the 6 pods unavailable at once.
func TestTenantHoldsOnlyItsShare(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	teamA, teamB := tempNamespace(t, "e2e-share-a-"), tempNamespace(t, "e2e-share-b-")
	editor := namespaceEditorKube(t, "e2e-share-editor", teamA)
	const name = "e2e-budget-share" // and the pods' app label
	createClusterSidecarSet(t, simpleSidecarSet(name, "busybox:1.36", ptr.To(intstr.FromInt32(2))))

	for i := range 4 {
		p := budgetPod(fmt.Sprintf("b-%d", i), teamB, name)
		p.Annotations = map[string]string{kwokRestartDelay: "3s"} // team-b's rollout lasts long enough to watch team-a wait
		if _, err := kube.CoreV1().Pods(teamB).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		mustHaveSidecar(t, waitPodRunning(t, teamB, fmt.Sprintf("b-%d", i), true))
	}
	for i := range 2 {
		p := budgetPod(fmt.Sprintf("a-%d", i), teamA, name)
		p.Annotations = map[string]string{kwokRestartDelay: "1h"}
		if _, err := editor.CoreV1().Pods(teamA).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the editor creates pod %s: %v", p.Name, err)
		}
	}
	for i := range 2 {
		mustHaveSidecar(t, waitPodRunning(t, teamA, fmt.Sprintf("a-%d", i), true))
	}
	waitStatus(t, name, v1alpha1.SidecarSetStatus{MatchedPods: 6, UpdatedPods: 6, ReadyPods: 6, UpdatedReadyPods: 6})

	stop, start := sampleUnavailable("", "app="+name), time.Now()
	patchImage(t, name, `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	// While team-b's pods are upgraded, the view says why team-a's other pod waits.
	lastView, waited := poll(budgetRolloutTimeout, func(ctx context.Context) (bool, string) {
		view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, p := range view.Status.Pods {
			if p.Namespace != teamA {
				continue
			}
			if p.Reason == rollout.ReasonNamespaceShare && strings.Contains(p.Message, "'s share of maxUnavailable 2 is 1 (its 2 pods of the 6 ") &&
				strings.Contains(p.Message, "1 of its pods hold it (a-") {
				return true, ""
			}
			seen = append(seen, fmt.Sprintf("%s %s/%s %q", p.Name, p.State, p.Reason, p.Message))
		}
		return false, strings.Join(seen, "; ")
	})
	eventually(t, "team-b's pods upgraded past team-a's", budgetRolloutTimeout, func(ctx context.Context) (bool, string) {
		return upgradedIn(ctx, teamB, name, "busybox:1.37", 4)
	})
	took, worst := time.Since(start), stop()
	t.Logf("team-b's 4 pods upgraded in %s; at most %d of the 6 pods unavailable at once", took.Round(100*time.Millisecond), worst)
	if worst > 2 {
		t.Errorf("%d pods of both namespaces were unavailable at once, maxUnavailable is 2", worst)
	}
	if !waited {
		t.Errorf("no pod of team-a waited for its namespace's share (%s) in the rollout view; last seen: %s", rollout.ReasonNamespaceShare, lastView)
	}
}

// TestTenantNewPodsHoldOnlyTheirShare: a cluster SidecarSet at maxUnavailable 2 selects pods of
// team-a and team-b. Its image changes while its rollout is paused; then team-a's editor creates
// three pods that never run (a nodeSelector no node has), injected with the new sidecars at
// creation. Once the rollout resumes, they hold team-a's share alone: team-b's four pods are
// upgraded, two at a time at most, while team-a's pods stay Pending.
func TestTenantNewPodsHoldOnlyTheirShare(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	teamA, teamB := tempNamespace(t, "e2e-born-a-"), tempNamespace(t, "e2e-born-b-")
	editor := namespaceEditorKube(t, "e2e-born-editor", teamA)
	const name = "e2e-budget-born" // and the pods' app label
	createClusterSidecarSet(t, simpleSidecarSet(name, "busybox:1.36", ptr.To(intstr.FromInt32(2))))
	for i := range 4 {
		if _, err := kube.CoreV1().Pods(teamB).Create(ctx, budgetPod(fmt.Sprintf("b-%d", i), teamB, name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		mustHaveSidecar(t, waitPodRunning(t, teamB, fmt.Sprintf("b-%d", i), true))
	}
	patchImage(t, name, `{"spec":{"updateStrategy":{"paused":true},"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	waitSettled(t, name)
	for i := range 3 {
		p := budgetPod(fmt.Sprintf("a-%d", i), teamA, name)
		p.Spec.NodeSelector = map[string]string{"e2e.sidecarset.dev/no-such-node": "true"}
		created, err := editor.CoreV1().Pods(teamA).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("the editor creates pod %s: %v", p.Name, err)
		}
		if len(created.Spec.Containers) < 2 || created.Spec.Containers[0].Image != "busybox:1.37" {
			t.Fatalf("pod %s created without the new sidecar: %+v", p.Name, created.Spec.Containers)
		}
	}
	stop := sampleUnavailable(teamB, "app="+name)
	patchImage(t, name, `{"spec":{"updateStrategy":{"paused":false}}}`)
	eventually(t, "team-b's pods upgraded while team-a's new pods stay Pending", budgetRolloutTimeout, func(ctx context.Context) (bool, string) {
		return upgradedIn(ctx, teamB, name, "busybox:1.37", 4)
	})
	if worst := stop(); worst > 2 {
		t.Errorf("%d of team-b's pods were unavailable at once, maxUnavailable is 2", worst)
	}
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if view.Status.Unavailable != 0 {
		t.Errorf("rollout view: %d unavailable, want 0 (team-a's new pods count against its share alone)", view.Status.Unavailable)
	}
}

// kwokRestartDelay is the pod annotation that sets how long the fake kubelet takes to restart a
// container whose image changed (hack/kwok/pod-stages.yaml).
const kwokRestartDelay = "kwok.x-k8s.io/image-change-delay"

// TestEvictionRefusalsDoNotFreeze: the cluster SidecarSet repairs pods that missed its injection
// (apps.kruise.io/repair-not-injected) by eviction; the editor's Deployment runs such a pod under
// two PodDisruptionBudgets, whose eviction kube-apiserver refuses (500) each time. The refusal
// holds no place and freezes nothing: a new image reaches team-b's pods, and the status observes
// the new generation, within a few rounds.
func TestEvictionRefusalsDoNotFreeze(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	teamA, teamB := tempNamespace(t, "e2e-evict-a-"), tempNamespace(t, "e2e-evict-b-")
	editor := namespaceEditorKube(t, "e2e-evict-editor", teamA)
	const name, app = "e2e-budget-evict", "e2e-budget-evict"

	// Before the SidecarSet: the Deployment's pod runs without its sidecar.
	labels := map[string]string{"app": app}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: teamA},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: budgetPod("", teamA, app).Spec}}}
	if _, err := editor.AppsV1().Deployments(teamA).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the editor creates its Deployment: %v", err)
	}
	for _, pdbName := range []string{"budget-1", "budget-2"} { // each would allow the eviction; two make kube-apiserver refuse it
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: pdbName, Namespace: teamA},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels}}}
		if _, err := editor.PolicyV1().PodDisruptionBudgets(teamA).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("the editor creates PodDisruptionBudget %s: %v", pdb.Name, err)
		}
	}
	eventually(t, "the editor's Deployment ready", time.Minute, func(ctx context.Context) (bool, string) {
		d, err := kube.AppsV1().Deployments(teamA).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.ReadyReplicas == 1, fmt.Sprintf("%d ready", d.Status.ReadyReplicas)
	})

	ss := simpleSidecarSet(name, "busybox:1.36", ptr.To(intstr.FromInt32(1)))
	ss.Annotations = map[string]string{rollout.RepairAnnotation: "true"}
	createClusterSidecarSet(t, ss)
	for i := range 2 {
		if _, err := kube.CoreV1().Pods(teamB).Create(ctx, budgetPod(fmt.Sprintf("b-%d", i), teamB, app), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mustHaveSidecar(t, waitPodRunning(t, teamB, fmt.Sprintf("b-%d", i), true))
	}
	// The controller has tried to evict the editor's pod by now: refused, it stays.
	eventually(t, "a refused eviction of the editor's pod reported", time.Minute, func(ctx context.Context) (bool, string) {
		events, err := kube.CoreV1().Events(teamA).List(ctx, metav1.ListOptions{FieldSelector: "reason=SidecarSetPodWriteFailed"})
		if err != nil {
			return false, err.Error()
		}
		return len(events.Items) > 0, fmt.Sprintf("%d events", len(events.Items))
	})

	patchImage(t, name, `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	eventually(t, "team-b's pods upgraded while the editor's pod refuses its eviction", budgetRolloutTimeout, func(ctx context.Context) (bool, string) {
		return upgradedIn(ctx, teamB, app, "busybox:1.37", 2)
	})
	eventually(t, "the new generation observed", budgetRolloutTimeout, func(ctx context.Context) (bool, string) {
		got, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.ObservedGeneration == got.Generation, fmt.Sprintf("observed %d of %d", got.Status.ObservedGeneration, got.Generation)
	})
	pods, err := kube.CoreV1().Pods(teamA).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil || len(pods.Items) != 1 || sidecar.FindPodContainer(&pods.Items[0], "sidecar1") != nil {
		t.Errorf("the editor's pod: %d pods (%v), want the one it had, not injected, never evicted", len(pods.Items), err)
	}
}

// mustHaveSidecar fails the test unless the pod was injected with sidecar1.
func mustHaveSidecar(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if sidecar.FindPodContainer(p, "sidecar1") == nil {
		t.Fatalf("pod %s/%s was created without sidecar1", p.Namespace, p.Name)
	}
}

// budgetPod is a pod of the given app with one container; name "" for a template.
func budgetPod(name, namespace, app string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}}}
}

// createClusterSidecarSet creates ss, deleted when the test ends, and waits until it is settled
// (pods created from then on are injected).
func createClusterSidecarSet(t *testing.T, ss *v1alpha1.SidecarSet) {
	t.Helper()
	if err := createSidecarSet(context.Background(), ss); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sidecars.AppsV1alpha1().SidecarSets().Delete(context.Background(), ss.Name, metav1.DeleteOptions{})
	})
	waitSettled(t, ss.Name)
}

// namespaceEditorKube binds user to the edit ClusterRole in namespace and returns a Kubernetes
// client acting as that user.
func namespaceEditorKube(t *testing.T, user, namespace string) kubernetes.Interface {
	t.Helper()
	namespaceEditor(t, user, namespace)
	cfg := rest.CopyConfig(restConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return kubernetes.NewForConfigOrDie(cfg)
}

// upgradedIn reports whether n pods of app in namespace run image in sidecar1, ready.
func upgradedIn(ctx context.Context, namespace, app, image string, n int) (bool, string) {
	list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return false, err.Error()
	}
	done := 0
	for i := range list.Items {
		if st := sidecar.ContainerStatus(&list.Items[i], "sidecar1"); st != nil && st.Image == image && st.Ready && podIsReady(&list.Items[i]) {
			done++
		}
	}
	return done == n, fmt.Sprintf("%d of %d upgraded", done, n)
}

// sampleUnavailable samples, four times a second, how many pods of namespace ("" for all) that
// selector selects are not ready or whose sidecar1 does not run its spec's image, ready; stop ends it and
// returns the largest number seen.
func sampleUnavailable(namespace, selector string) (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	worst := make(chan int)
	go func() {
		most := 0
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				worst <- most
				return
			case <-tick.C:
			}
			list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				continue
			}
			n := 0
			for i := range list.Items {
				p := &list.Items[i]
				st, c := sidecar.ContainerStatus(p, "sidecar1"), sidecar.FindPodContainer(p, "sidecar1")
				if !podIsReady(p) || st == nil || c == nil || st.Image != c.Image || !st.Ready {
					n++
				}
			}
			most = max(most, n)
		}
	}()
	return func() int { cancel(); return <-worst }
}
