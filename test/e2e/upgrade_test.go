package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

const upgradeNamespace = "sidecarset-upgrade"

// TestManualExampleUpgrade is the manual's in-place upgrade: centos:6.7 -> centos:7 restarts
// sidecar1 once, leaves the app container alone and the pod in place.
func TestManualExampleUpgrade(t *testing.T) {
	parallelTest(t, fixtureManualExample)
	applyManualExample(t)
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := json.Unmarshal(mustJSON(t, manualPod), pod); err != nil {
		t.Fatal(err)
	}
	_ = kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	waitGone(t, "default", pod.Name)
	if _, err := kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}) })
	before := waitPodRunning(t, "default", pod.Name, true)
	waitStatus(t, "test-sidecarset", v1alpha1.SidecarSetStatus{MatchedPods: 1, UpdatedPods: 1, ReadyPods: 1, UpdatedReadyPods: 1})

	if out, err := runKubectl(t, "", "patch", "sidecarset", "test-sidecarset", "--type=strategic",
		"-p", `{"spec":{"containers":[{"name":"sidecar1","image":"centos:7"}]}}`); err != nil {
		t.Fatalf("patch: %v: %s", err, out)
	}
	// The Ready condition is what a user (or a GitOps tool) waits for: once it holds, the pod runs
	// the new sidecar, ready.
	if out, err := runKubectl(t, "", "wait", "--for=condition=Ready", "sidecarset/test-sidecarset", "--timeout=90s"); err != nil {
		t.Fatalf("kubectl wait --for=condition=Ready: %v: %s", err, out)
	}
	if got, err := kube.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if st := sidecar.ContainerStatus(got, "sidecar1"); st == nil || st.Image != "centos:7" || !st.Ready {
		t.Errorf("the SidecarSet is Ready while sidecar1 does not run the new image, ready: %+v", st)
	}
	after := waitPod(t, "default", pod.Name, func(p *corev1.Pod) bool {
		st := sidecar.ContainerStatus(p, "sidecar1")
		return st != nil && st.Image == "centos:7" && st.Ready
	})
	waitStatus(t, "test-sidecarset", v1alpha1.SidecarSetStatus{MatchedPods: 1, UpdatedPods: 1, ReadyPods: 1, UpdatedReadyPods: 1})
	if after.UID != before.UID {
		t.Error("the pod was recreated")
	}
	if img := sidecar.FindPodContainer(after, "sidecar1").Image; img != "centos:7" {
		t.Errorf("sidecar1 spec image %s", img)
	}
	restarts := func(p *corev1.Pod, c string) int32 { return sidecar.ContainerStatus(p, c).RestartCount }
	if got, was := restarts(after, "sidecar1"), restarts(before, "sidecar1"); got != was+1 {
		t.Errorf("sidecar1 restartCount %d, want %d", got, was+1)
	}
	if got, was := restarts(after, "app"), restarts(before, "app"); got != was {
		t.Errorf("app restarted: restartCount %d, was %d", got, was)
	}
	if a, b := sidecar.ContainerStatus(after, "app").ContainerID, sidecar.ContainerStatus(before, "app").ContainerID; a != b {
		t.Errorf("app containerID changed: %s -> %s", b, a)
	}
	// The first verdict of an upgraded pod follows once the rollout is quiet.
	waitPod(t, "default", pod.Name, func(p *corev1.Pod) bool {
		c := podCondition(p, sidecar.UpgradableCondition)
		return c != nil && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, `"test-sidecarset":true`)
	})
}

// TestNativeSidecarUpgrade: a native sidecar (an initContainer with restartPolicy Always) is
// upgraded in place like a container.
func TestNativeSidecarUpgrade(t *testing.T) {
	parallelTest(t)
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "native"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "native"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType},
			InitContainers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "agent", Image: "agent:1",
				RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}},
		},
	}
	pods := setupUpgrade(t, ss, "native", 1)
	before := pods[0]
	patchImage(t, "native", `{"spec":{"initContainers":[{"name":"agent","image":"agent:2","restartPolicy":"Always"}]}}`)
	after := waitPod(t, upgradeNamespace, before.Name, func(p *corev1.Pod) bool {
		st := sidecar.ContainerStatus(p, "agent")
		return st != nil && st.Image == "agent:2" && st.Ready && podIsReady(p)
	})
	waitStatus(t, "native", v1alpha1.SidecarSetStatus{MatchedPods: 1, UpdatedPods: 1, ReadyPods: 1, UpdatedReadyPods: 1})
	b, a := sidecar.ContainerStatus(before, "agent"), sidecar.ContainerStatus(after, "agent")
	if a.RestartCount != b.RestartCount+1 || a.ContainerID == b.ContainerID {
		t.Errorf("agent not restarted: %+v -> %+v", b, a)
	}
	if app := sidecar.ContainerStatus(after, "app"); app.RestartCount != 0 || app.ContainerID != sidecar.ContainerStatus(before, "app").ContainerID {
		t.Errorf("app restarted: %+v", app)
	}
	if after.UID != before.UID || sidecar.FindPodContainer(after, "agent").Image != "agent:2" {
		t.Errorf("pod recreated or spec not upgraded")
	}
}

// TestBadImageStopsAtMaxUnavailable: an unpullable image stops the rollout after maxUnavailable
// pods, /rollout says why the others wait, pause/resume work, and rolling back to the previous
// revision through /rollout heals the failed pods.
func TestBadImageStopsAtMaxUnavailable(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	ss := simpleSidecarSet("stall", "busybox:1.36", ptr.To(intstr.FromInt32(2)))
	setupUpgrade(t, ss, "stall", 6)
	good := waitSettled(t, "stall").Status.LatestRevision
	patchImage(t, "stall", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:bad"}]}}`)
	waitStatus(t, "stall", v1alpha1.SidecarSetStatus{MatchedPods: 6, UpdatedPods: 2, ReadyPods: 4, UpdatedReadyPods: 0})
	consistently(t, "the rollout stalled at maxUnavailable", time.Second, 10*time.Second,
		statusIs(sidecars, "stall", v1alpha1.SidecarSetStatus{MatchedPods: 6, UpdatedPods: 2, ReadyPods: 4, UpdatedReadyPods: 0}))

	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "stall", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, p := range view.Status.Pods {
		states[string(p.State)+"/"+p.Reason]++
	}
	want := map[string]int{"Failed/ImagePullBackOff": 2, "Waiting/MaxUnavailable": 4}
	if fmt.Sprint(states) != fmt.Sprint(want) || view.Status.MaxUnavailable != 2 || view.Status.Unavailable != 2 {
		t.Errorf("rollout view: states %v (want %v), maxUnavailable %d, unavailable %d", states, want,
			view.Status.MaxUnavailable, view.Status.Unavailable)
	}
	if view.Status.Phase != v1alpha1.RolloutStalled || !strings.Contains(view.Status.Message, "ImagePullBackOff") ||
		!strings.Contains(view.Status.Summary, "0 of 6 pods updated") {
		t.Errorf("rollout view: phase %q, message %q, summary %q; want Stalled on ImagePullBackOff, 0 of 6 updated",
			view.Status.Phase, view.Status.Message, view.Status.Summary)
	}
	if m := serverMetrics(t); !strings.Contains(m, `sidecarset_pods_waiting{reason="MaxUnavailable",sidecarset="stall"} 4`) {
		t.Errorf("metrics lack the waiting pods:\n%s", grepLines(m, "sidecarset_"))
	}

	// An operator allowed only the rollout subresource pauses and resumes.
	operator := asUser(t, "e2e-rollout-operator", []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"},
		Resources: []string{"sidecarsets/rollout"}, Verbs: []string{"get", "create"}}})
	for _, action := range []v1alpha1.RolloutAction{v1alpha1.RolloutActionPause, v1alpha1.RolloutActionResume} {
		var got *v1alpha1.SidecarSetRollout
		// Authorization decisions are cached for a few seconds: retry until it is allowed.
		eventually(t, fmt.Sprintf("%s through sidecarsets/rollout", action), 30*time.Second, func(ctx context.Context) (bool, string) {
			var err error
			got, err = operator.AppsV1alpha1().SidecarSets().Rollout(ctx, "stall",
				&v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: action}}, metav1.CreateOptions{})
			return err == nil, fmt.Sprintf("rollout: %v", err)
		})
		if got.Status.Paused != (action == v1alpha1.RolloutActionPause) {
			t.Errorf("%s: view says paused=%v", action, got.Status.Paused)
		}
	}
	if _, err := operator.AppsV1alpha1().SidecarSets().Patch(ctx, "stall", types.MergePatchType,
		[]byte(`{"spec":{"updateStrategy":{"paused":true}}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the operator may not patch sidecarsets: %v", err)
	}

	_, err = operator.AppsV1alpha1().SidecarSets().Rollout(ctx, "stall", &v1alpha1.SidecarSetRollout{
		Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: good}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("rollback to %s: %v", good, err)
	}
	waitStatus(t, "stall", v1alpha1.SidecarSetStatus{MatchedPods: 6, UpdatedPods: 6, ReadyPods: 6, UpdatedReadyPods: 6})
	for _, p := range listPods(t, "stall") {
		if img := sidecar.FindPodContainer(p, "sidecar1").Image; img != "busybox:1.36" {
			t.Errorf("pod %s runs %s after the rollback", p.Name, img)
		}
	}
}

// TestServerRestartMidRollout kills the server in the middle of a rollout: the new one resumes
// from the pods' annotations, finishes, and at no sampled moment are more than maxUnavailable
// upgraded pods unavailable.
func TestServerRestartMidRollout(t *testing.T) {
	ss := simpleSidecarSet("resume", "busybox:1.36", ptr.To(intstr.FromInt32(2)))
	setupUpgrade(t, ss, "resume", 10)
	stop := make(chan struct{})
	var mu sync.Mutex
	worst := 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample: upgraded pods whose new sidecar is not running and ready yet
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			list, err := kube.CoreV1().Pods(upgradeNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=resume"})
			if err != nil {
				continue
			}
			n := 0
			for i := range list.Items {
				p := &list.Items[i]
				st := sidecar.ContainerStatus(p, "sidecar1")
				if sidecar.FindPodContainer(p, "sidecar1").Image == "busybox:1.37" && (st == nil || st.Image != "busybox:1.37" || !st.Ready) {
					n++
				}
			}
			mu.Lock()
			worst = max(worst, n)
			mu.Unlock()
		}
	}()
	patchImage(t, "resume", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	waitPods(t, "resume", func(pods []*corev1.Pod) bool { return countImage(pods, "busybox:1.37") >= 3 })
	if _, err := localUp("restart-server"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, "resume", v1alpha1.SidecarSetStatus{MatchedPods: 10, UpdatedPods: 10, ReadyPods: 10, UpdatedReadyPods: 10})
	close(stop)
	wg.Wait()
	if worst > 2 {
		t.Errorf("%d upgraded pods were unavailable at once, maxUnavailable is 2", worst)
	}
	ss = waitSettled(t, "resume")
	for _, p := range listPods(t, "resume") {
		hash, _ := hashRecord(p.Annotations[sidecar.HashAnnotation], "resume")
		st := sidecar.ContainerStatus(p, "sidecar1")
		if hash != ss.Annotations[sidecar.HashAnnotation] || st.Image != "busybox:1.37" || st.RestartCount != 1 ||
			!strings.Contains(p.Annotations[sidecar.InPlaceUpdateStateAnnotation], `"sidecar1"`) {
			t.Errorf("pod %s half upgraded: hash %s, status %+v, state %s", p.Name, hash, st, p.Annotations[sidecar.InPlaceUpdateStateAnnotation])
		}
	}
}

func simpleSidecarSet(name, image string, maxUnavailable *intstr.IntOrString) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType,
				MaxUnavailable: maxUnavailable},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "sidecar1", Image: image,
				Command: []string{"sleep", "999d"}}}},
		},
	}
}

// setupUpgrade starts over with ss alone and n running, ready pods labelled app=<app> in the
// upgrade namespace, and returns them.
func setupUpgrade(t *testing.T, ss *v1alpha1.SidecarSet, app string, n int) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	startOver(t, upgradeNamespace, "app="+app, ss.Name)
	if err := applySidecarSet(t, ss); err != nil {
		t.Fatalf("apply SidecarSet %s: %v", ss.Name, err)
	}
	waitSettled(t, ss.Name)
	waitRecordsRevision(t, ss.Name, app)
	for i := 0; i < n; i++ {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Namespace: upgradeNamespace, Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}},
		}
		if _, err := kube.CoreV1().Pods(upgradeNamespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		pods = append(pods, waitPodRunning(t, upgradeNamespace, fmt.Sprintf("%s-%d", app, i), true))
	}
	waitStatus(t, ss.Name, v1alpha1.SidecarSetStatus{MatchedPods: int32(n), UpdatedPods: int32(n), ReadyPods: int32(n), UpdatedReadyPods: int32(n)})
	return pods
}

// waitRecordsRevision waits until a pod labelled app=<app> is injected with the SidecarSet's
// recorded revision (a dry run): the injection path's cache has caught up with the revision the
// controller recorded, which waitSettled reads from storage.
func waitRecordsRevision(t *testing.T, name, app string) {
	t.Helper()
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: app + "-probe", Namespace: upgradeNamespace, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
	eventually(t, "pods injected with the recorded revision of "+name, time.Minute, func(context.Context) (bool, string) {
		got, err := createPodDryRun(probe)
		if err != nil {
			return false, err.Error()
		}
		_, revision := hashRecord(got.Annotations[sidecar.HashAnnotation], name)
		return revision != "", "record " + got.Annotations[sidecar.HashAnnotation]
	})
}

func patchImage(t *testing.T, name, patch string) {
	t.Helper()
	patchImageOn(t, sidecars, name, patch)
}

// patchImageOn is patchImage through the given client (e.g. one server replica directly).
func patchImageOn(t *testing.T, client clientset.Interface, name, patch string) {
	t.Helper()
	if _, err := client.AppsV1alpha1().SidecarSets().Patch(context.Background(), name, types.StrategicMergePatchType,
		[]byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch %s: %v", name, err)
	}
}

func listPods(t *testing.T, app string) []*corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(upgradeNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func countImage(pods []*corev1.Pod, image string) int {
	n := 0
	for _, p := range pods {
		if c := sidecar.FindPodContainer(p, "sidecar1"); c != nil && c.Image == image {
			n++
		}
	}
	return n
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// serverMetrics scrapes the /metrics of server replica 1 (the registered one).
func serverMetrics(t *testing.T) string {
	t.Helper()
	return replicaMetrics(t, 1)
}

// replicaClient returns a client of server replica n's own endpoints (as cluster admin).
func replicaClient(t *testing.T, replica int) *rest.RESTClient {
	t.Helper()
	cfg := serverConfig(replica)
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// replicaMetrics scrapes server replica n's /metrics directly (as cluster admin).
func replicaMetrics(t *testing.T, replica int) string {
	t.Helper()
	data, err := replicaClient(t, replica).Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /metrics of replica %d: %v", replica, err)
	}
	return string(data)
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRevisionRunByPodIsKept: pruning beyond revisionHistoryLimit keeps the revision a pod still
// runs (here under updateStrategy NotUpdate).
func TestRevisionRunByPodIsKept(t *testing.T) {
	parallelTest(t)
	ss := simpleSidecarSet("keep", "busybox:1.36", nil)
	ss.Spec.UpdateStrategy.Type = v1alpha1.NotUpdateSidecarSetStrategyType
	ss.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	pods := setupUpgrade(t, ss, "keep", 1)
	_, used := hashRecord(pods[0].Annotations[sidecar.HashAnnotation], "keep")
	if used == "" {
		t.Fatalf("the pod records no revision: %v", pods[0].Annotations)
	}
	for _, image := range []string{"busybox:1.37", "busybox:1.38"} {
		patchImage(t, "keep", `{"spec":{"containers":[{"name":"sidecar1","image":"`+image+`"}]}}`)
		waitSettled(t, "keep")
	}
	latest := waitSettled(t, "keep").Status.LatestRevision
	if last, ok := poll(30*time.Second, func(ctx context.Context) (bool, string) {
		list, err := sidecars.AppsV1alpha1().SidecarSetRevisions().List(ctx, metav1.ListOptions{LabelSelector: "apps.kruise.io/sidecarset-name=keep"})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, r := range list.Items {
			names = append(names, r.Name)
		}
		sort.Strings(names)
		want := []string{used, latest}
		sort.Strings(want)
		return fmt.Sprint(names) == fmt.Sprint(want), fmt.Sprintf("revisions %v", names)
	}); !ok {
		t.Errorf("waited 30s for the revisions to be the pod's %s and the latest %s only; last seen: %s", used, latest, last)
	}
}
