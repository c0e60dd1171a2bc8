package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Tests on the real node of hack/local-up.sh (REAL_NODE=1: containerd, runc and a kubelet beside
// the kwok nodes; node-up). Its pods run hack/testimage, whose images sidecarset.dev/test:v1..v3
// are imported into containerd (no registry): each prints its version, its environment and the
// files of LIST_DIRS to its log (alias-v1 is a second tag of v1). Every test skips when the node
// is not Ready. make test runs TestRealNodeInjection, TestRealNodeUpgrade and
// TestRealNodeSharedDigestUpgrade; make e2e-node (E2E_REAL_NODE_ALL=1) runs them all.

const (
	realNodeNamespace = "sidecarset-realnode"
	realNodeLabel     = "sidecarset.dev/real-kubelet"
	testImage         = "sidecarset.dev/test"
)

// requireRealNode skips the test unless the real node is Ready; with all, also unless
// E2E_REAL_NODE_ALL=1 (the tests make test leaves to make e2e-node).
func requireRealNode(t *testing.T, all bool) {
	t.Helper()
	if all && os.Getenv("E2E_REAL_NODE_ALL") != "1" {
		t.Skip("set E2E_REAL_NODE_ALL=1 (make e2e-node) to run every real-node test")
	}
	name := os.Getenv("NODE_NAME")
	if name == "" {
		name = "real-node-0"
	}
	node, err := kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Skipf("no real node %s (REAL_NODE=1 hack/local-up.sh up starts it): %v", name, err)
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return
		}
	}
	t.Skipf("real node %s is not Ready", name)
}

// realSidecar is a sidecar running the test image at version: it serves /ready on port, lists
// the files of listDirs and gets env.
func realSidecar(name, version string, port int32, env ...corev1.EnvVar) v1alpha1.SidecarContainer {
	return v1alpha1.SidecarContainer{Container: corev1.Container{Name: name, Image: testImage + ":" + version,
		ImagePullPolicy: corev1.PullNever,
		Env:             append([]corev1.EnvVar{{Name: "PORT", Value: fmt.Sprint(port)}}, env...),
		ReadinessProbe:  readyProbe(port)}}
}

func readyProbe(port int32) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(port)}},
		PeriodSeconds: 1, FailureThreshold: 1}
}

// realPod is a pod for the real node labelled app=<app> with one container "app" (test image v1,
// /ready on 8080) and the given environment.
func realPod(name, app string, env ...corev1.EnvVar) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: realNodeNamespace, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			NodeSelector:                  map[string]string{realNodeLabel: "true"},
			Tolerations:                   []corev1.Toleration{{Key: realNodeLabel, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "app", Image: testImage + ":v1", ImagePullPolicy: corev1.PullNever,
				Env: append([]corev1.EnvVar{{Name: "PORT", Value: "8080"}}, env...), ReadinessProbe: readyProbe(8080)}},
		},
	}
}

// setupRealNode starts over with ss alone and the pods created, and waits until they run, are
// ready and the SidecarSet counts them all.
func setupRealNode(t *testing.T, ss *v1alpha1.SidecarSet, pods ...*corev1.Pod) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	startOver(t, realNodeNamespace, "", ss.Name) // under fixtureRealNode
	if err := applySidecarSet(t, ss); err != nil {
		t.Fatalf("apply SidecarSet %s: %v", ss.Name, err)
	}
	waitSettled(t, ss.Name)
	created := time.Now()
	for _, p := range pods {
		if _, err := kube.CoreV1().Pods(realNodeNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods(realNodeNamespace).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	var out []*corev1.Pod
	for _, p := range pods {
		out = append(out, waitPodRunning(t, realNodeNamespace, p.Name, true))
	}
	t.Logf("%d pods created to running and ready on the real node: %v", len(pods), time.Since(created).Round(10*time.Millisecond))
	n := int32(len(pods))
	waitStatus(t, ss.Name, v1alpha1.SidecarSetStatus{MatchedPods: n, UpdatedPods: n, ReadyPods: n, UpdatedReadyPods: n})
	return out
}

func hasLine(log, line string) bool {
	for _, l := range strings.Split(log, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// runsNew reports whether the pod's container runs an instance other than the one of before,
// started from image, and is ready: an in-place restart is over.
func runsNew(p *corev1.Pod, container string, before *corev1.ContainerStatus, image string) bool {
	st := sidecar.ContainerStatus(p, container)
	return st != nil && st.State.Running != nil && st.Ready && st.ContainerID != "" && st.ContainerID != before.ContainerID &&
		reportsImage(st, image)
}

// reportsImage reports whether the status names image as containerd does: by the first tag of
// its digest, so v1's containers show alias-v1 (hack/local-up.sh tags v1's image so).
func reportsImage(st *corev1.ContainerStatus, image string) bool {
	return st.Image == image || (image == testImage+":v1" && st.Image == testImage+":alias-v1")
}

// TestRealNodeInjection: the manual's first example on a real kubelet. A SidecarSet selecting
// app=rn-inject with sidecar1 and a shared emptyDir log-volume; a pod on the real node gets
// sidecar1, which really runs (its log shows its version), and each container sees the file the
// other wrote into the shared volume.
func TestRealNodeInjection(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, false)
	sc := realSidecar("sidecar1", "v1", 8081,
		corev1.EnvVar{Name: "LIST_DIRS", Value: "/var/log"}, corev1.EnvVar{Name: "WRITE_FILE", Value: "/var/log/sidecar.txt=from-sidecar1"})
	sc.VolumeMounts = []corev1.VolumeMount{{Name: "log-volume", MountPath: "/var/log"}}
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-inject"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-inject"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{sc},
			Volumes:        []corev1.Volume{{Name: "log-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	pod := realPod("rn-inject-0", "rn-inject",
		corev1.EnvVar{Name: "LIST_DIRS", Value: "/shared"}, corev1.EnvVar{Name: "WRITE_FILE", Value: "/shared/app.txt=from-app"})
	// The app mounts the volume the SidecarSet brings.
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "log-volume", MountPath: "/shared"}}
	got := setupRealNode(t, ss, pod)[0]
	var names []string
	for _, c := range got.Spec.Containers {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "sidecar1,app" {
		t.Fatalf("containers %s, want sidecar1,app", names)
	}
	st := sidecar.ContainerStatus(got, "sidecar1")
	if st.State.Running == nil || !st.Ready || !reportsImage(st, testImage+":v1") || !strings.HasPrefix(st.ContainerID, "containerd://") {
		t.Fatalf("sidecar1 status %+v", st)
	}
	waitContainerLog(t, pod.Name, "sidecar1", "version=v1", "file /var/log/app.txt: from-app", "file /var/log/sidecar.txt: from-sidecar1")
	waitContainerLog(t, pod.Name, "app", "version=v1", "file /shared/sidecar.txt: from-sidecar1")
}

// TestRealNodeUpgrade: sidecar1 v1 -> v2 in place on the real kubelet. The kubelet restarts
// sidecar1 with the new image (new containerID and imageID, restartCount+1; its log shows v2),
// the app container keeps its containerID and restartCount 0, and the SidecarSet's status never
// counts the pod updated and ready before its new sidecar1 runs and is ready.
func TestRealNodeUpgrade(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, false)
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-upgrade"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-upgrade"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	before := setupRealNode(t, ss, realPod("rn-upgrade-0", "rn-upgrade"))[0]
	upgradeInPlace(t, "rn-upgrade", before, "sidecar1",
		`{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:v2"}]}}`)
}

// upgradeInPlace patches the SidecarSet to image v2 of container and checks the in-place restart
// of pod before, sampling the SidecarSet's status and then the pod every 50 ms: whenever the
// status (of the new revision) counts the pod updated and ready, the pod read after it must
// already run the new container, ready.
func upgradeInPlace(t *testing.T, name string, before *corev1.Pod, container, patch string) {
	t.Helper()
	upgradeInPlaceTo(t, name, before, container, testImage+":v2", "v2", patch)
}

// upgradeInPlaceTo is upgradeInPlace to image, whose program prints version.
func upgradeInPlaceTo(t *testing.T, name string, before *corev1.Pod, container, image, version, patch string) {
	t.Helper()
	ctx := context.Background()
	b := sidecar.ContainerStatus(before, container).DeepCopy()
	bApp := sidecar.ContainerStatus(before, "app").DeepCopy()
	current, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patched := time.Now()
	patchImage(t, name, patch)
	var premature []string
	var after *corev1.Pod
	// Every 50 ms: to catch the counters running ahead of the pod.
	eventuallyEvery(t, fmt.Sprintf("the upgrade of %s of pod %s to %s", container, before.Name, image), 50*time.Millisecond, rolloutTimeout, func(ctx context.Context) (bool, string) {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p, err := kube.CoreV1().Pods(realNodeNamespace).Get(ctx, before.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		// The counters are for the new spec once its revision is recorded (observedGeneration may
		// come later: in policy mode the server lets kube-apiserver drop the old policy first).
		newRev := ss.Status.LatestRevision != current.Status.LatestRevision
		newGen := newRev && ss.Status.ObservedGeneration == ss.Generation
		done := runsNew(p, container, b, image) && podIsReady(p)
		if newRev && ss.Status.UpdatedReadyPods == 1 && !done {
			st := sidecar.ContainerStatus(p, container)
			premature = append(premature, fmt.Sprintf("%v after the patch: updatedReadyPods 1, pod observedGeneration %d/%d, %s %+v",
				time.Since(patched).Round(10*time.Millisecond), p.Status.ObservedGeneration, p.Generation, container, st))
		}
		after = p
		return newGen && done && ss.Status.MatchedPods == 1 && ss.Status.UpdatedPods == 1 && ss.Status.ReadyPods == 1 && ss.Status.UpdatedReadyPods == 1,
			fmt.Sprintf("SidecarSet generation %d, status %+v; pod status %+v", ss.Generation, ss.Status, p.Status)
	})
	for _, m := range premature {
		t.Errorf("the SidecarSet counted the pod updated and ready before its new %s ran: %s", container, m)
	}
	a := sidecar.ContainerStatus(after, container)
	t.Logf("patch to new %s running and ready, as sampled: %v (container started %v after the patch)", container,
		time.Since(patched).Round(10*time.Millisecond), a.State.Running.StartedAt.Sub(patched).Round(100*time.Millisecond))
	if a.RestartCount != b.RestartCount+1 || a.ContainerID == b.ContainerID || (version != "v1" && a.ImageID == b.ImageID) {
		t.Errorf("%s not restarted with the new image: %+v -> %+v", container, b, a)
	}
	if app := sidecar.ContainerStatus(after, "app"); app.RestartCount != 0 || app.ContainerID != bApp.ContainerID {
		t.Errorf("app restarted: %+v -> %+v", bApp, app)
	}
	if after.UID != before.UID {
		t.Error("the pod was recreated")
	}
	waitContainerLog(t, after.Name, container, "version="+version)
	if prev, err := kube.CoreV1().Pods(realNodeNamespace).GetLogs(after.Name, &corev1.PodLogOptions{Container: container, Previous: true}).DoRaw(ctx); err != nil ||
		!hasLine(string(prev), "version=v1") || !strings.Contains(string(prev), "version=v1 stopping on terminated") {
		t.Errorf("previous log of %s (the v1 container, stopped by SIGTERM): %v\n%s", container, err, prev)
	}
}

// TestRealNodeSharedDigestUpgrade: sidecar1 v1 -> alias-v1, a second tag of the same image.
// containerd reports a container's image as the first tag of its digest, so the status names
// alias-v1 for the v1 container already, before any restart: the SidecarSet must still wait for
// the kubelet to replace the container (a spec change restarts it) before counting the pod
// updated and ready.
func TestRealNodeSharedDigestUpgrade(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, false)
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-alias"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-alias"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	before := setupRealNode(t, ss, realPod("rn-alias-0", "rn-alias"))[0]
	alias := testImage + ":alias-v1"
	b := sidecar.ContainerStatus(before, "sidecar1").DeepCopy()
	if b.Image != alias {
		t.Skipf("the runtime reports the v1 container's image as %s, not %s: nothing to check", b.Image, alias)
	}
	upgradeInPlaceTo(t, "rn-alias", before, "sidecar1", alias, "v1",
		`{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:alias-v1"}]}}`)
}

// TestRealNodeNativeSidecarUpgrade: a native sidecar (an init container with restartPolicy
// Always) upgraded in place on the real kubelet, as a container is.
func TestRealNodeNativeSidecarUpgrade(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, true)
	agent := realSidecar("agent", "v1", 8082)
	agent.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-native"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-native"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType},
			InitContainers: []v1alpha1.SidecarContainer{agent},
		},
	}
	before := setupRealNode(t, ss, realPod("rn-native-0", "rn-native"))[0]
	if len(before.Spec.InitContainers) != 1 || before.Spec.InitContainers[0].Name != "agent" {
		t.Fatalf("init containers %+v", before.Spec.InitContainers)
	}
	waitContainerLog(t, before.Name, "agent", "version=v1")
	upgradeInPlace(t, "rn-native", before, "agent",
		`{"spec":{"initContainers":[{"name":"agent","image":"sidecarset.dev/test:v2","restartPolicy":"Always"}]}}`)
}

// TestRealNodeTransferEnvAndShareVolume: transferEnv and shareVolumePolicy as the running sidecar
// sees them: the app's variable in its environment, the app's volume mounted and its file visible.
func TestRealNodeTransferEnvAndShareVolume(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, true)
	sc := realSidecar("sidecar1", "v1", 8081, corev1.EnvVar{Name: "LIST_DIRS", Value: "/data"})
	sc.TransferEnv = []v1alpha1.TransferEnvVar{{SourceContainerName: "app", EnvName: "APP_COLOR"}}
	sc.ShareVolumePolicy = v1alpha1.ShareVolumePolicy{Type: v1alpha1.ShareVolumePolicyEnabled}
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-env"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-env"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType},
			Containers:     []v1alpha1.SidecarContainer{sc},
		},
	}
	pod := realPod("rn-env-0", "rn-env", corev1.EnvVar{Name: "APP_COLOR", Value: "teal"},
		corev1.EnvVar{Name: "WRITE_FILE", Value: "/data/app.txt=written-by-app"})
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	got := setupRealNode(t, ss, pod)[0]
	if c := sidecar.FindPodContainer(got, "sidecar1"); c == nil || len(c.VolumeMounts) == 0 {
		t.Fatalf("sidecar1 has no shared volume: %+v", c)
	}
	waitContainerLog(t, pod.Name, "sidecar1", "version=v1", "env APP_COLOR=teal", "file /data/app.txt: written-by-app")
}

// TestRealNodeBadImageRollback: an image that is not there (imagePullPolicy Never:
// ErrImageNeverPull) stalls the rollout within maxUnavailable; a rollback through /rollout
// recovers the pods.
func TestRealNodeBadImageRollback(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, true)
	ctx := context.Background()
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-stall"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-stall"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	setupRealNode(t, ss, realPod("rn-stall-0", "rn-stall"), realPod("rn-stall-1", "rn-stall"), realPod("rn-stall-2", "rn-stall"))
	good := waitSettled(t, "rn-stall").Status.LatestRevision
	patchImage(t, "rn-stall", `{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:missing"}]}}`)
	stalled := v1alpha1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 1, ReadyPods: 2, UpdatedReadyPods: 0}
	waitStatus(t, "rn-stall", stalled)
	consistently(t, "the rollout stalled at maxUnavailable", time.Second, 5*time.Second, statusIs(sidecars, "rn-stall", stalled))
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "rn-stall", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, p := range view.Status.Pods {
		reason := p.Reason
		if p.State == v1alpha1.PodRolloutFailed && reason == "CrashLoopBackOff" {
			// The kubelet reports a container whose image may not be pulled as ErrImageNeverPull,
			// then as CrashLoopBackOff while it waits to try again, in turns.
			reason = "ErrImageNeverPull"
		}
		states[string(p.State)+"/"+reason]++
	}
	if want := map[string]int{"Failed/ErrImageNeverPull": 1, "Waiting/MaxUnavailable": 2}; fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("rollout view: states %v, want %v", states, want)
	}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Rollout(ctx, "rn-stall", &v1alpha1.SidecarSetRollout{
		Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: good}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("rollback to %s: %v", good, err)
	}
	waitStatus(t, "rn-stall", v1alpha1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3})
	for _, p := range listRealPods(t, "rn-stall") {
		st := sidecar.ContainerStatus(p, "sidecar1")
		if st == nil || !reportsImage(st, testImage+":v1") || st.State.Running == nil || !st.Ready {
			t.Errorf("pod %s sidecar1 after the rollback: %+v", p.Name, st)
		}
	}
}

func listRealPods(t *testing.T, app string) []*corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(realNodeNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

// TestRealNodeBudget: a rollout over 4 real pods at maxUnavailable 1, to alias-v1. Every pod event (a watch,
// so every state the pods went through, in order) is checked: never are two pods' sidecars being
// replaced at once (spec image new, the new container not yet running and ready). And whenever the
// SidecarSet's status (sampled every 50 ms, then the pods read) counts k pods updated and ready, at
// least k pods already run their new container, ready.
func TestRealNodeBudget(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, true)
	ctx := context.Background()
	const n = 4
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-budget"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-budget"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	var pods []*corev1.Pod
	for i := 0; i < n; i++ {
		pods = append(pods, realPod(fmt.Sprintf("rn-budget-%d", i), "rn-budget"))
	}
	before := map[string]*corev1.ContainerStatus{}
	for _, p := range setupRealNode(t, ss, pods...) {
		before[p.Name] = sidecar.ContainerStatus(p, "sidecar1").DeepCopy()
	}
	// alias-v1 shares v1's digest: containerd already names the old containers alias-v1, so only
	// their restarts tell the rollout's progress.
	image := testImage + ":alias-v1"
	done := func(p *corev1.Pod) bool { return runsNew(p, "sidecar1", before[p.Name], image) && podIsReady(p) }
	replacing := func(p *corev1.Pod) bool {
		return sidecar.FindPodContainer(p, "sidecar1").Image == image && !done(p)
	}

	list, err := kube.CoreV1().Pods(realNodeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=rn-budget"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := kube.CoreV1().Pods(realNodeNamespace).Watch(ctx, metav1.ListOptions{LabelSelector: "app=rn-budget", ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var mu sync.Mutex
	worst, events := 0, 0
	var worstAt string
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		state := map[string]*corev1.Pod{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			state[p.Name] = p
			k, names := 0, []string{}
			for _, q := range state {
				if replacing(q) {
					k++
					names = append(names, q.Name)
				}
			}
			mu.Lock()
			events++
			if k > worst {
				worst, worstAt = k, strings.Join(names, ",")
			}
			mu.Unlock()
		}
	}()

	rev := waitSettled(t, "rn-budget").Status.LatestRevision
	patchImage(t, "rn-budget", `{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:alias-v1"}]}}`)
	start := time.Now()
	var premature []string
	// Every 50 ms: to catch the counters running ahead of the pods.
	eventuallyEvery(t, fmt.Sprintf("the rollout of rn-budget's %d pods", n), 50*time.Millisecond, rolloutTimeout, func(ctx context.Context) (bool, string) {
		cur, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "rn-budget", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if cur.Status.LatestRevision == rev { // the counters are still the old spec's
			return false, "revision " + rev + " still the latest"
		}
		ps := listRealPods(t, "rn-budget")
		k := 0
		for _, p := range ps {
			if done(p) {
				k++
			}
		}
		if cur.Status.UpdatedReadyPods > int32(k) {
			premature = append(premature, fmt.Sprintf("%v: updatedReadyPods %d, %d pods run their new sidecar1",
				time.Since(start).Round(10*time.Millisecond), cur.Status.UpdatedReadyPods, k))
		}
		return k == n && cur.Status.ObservedGeneration == cur.Generation &&
				cur.Status.UpdatedReadyPods == n && cur.Status.UpdatedPods == n && cur.Status.ReadyPods == n,
			fmt.Sprintf("%d pods run their new sidecar1; generation %d, status %+v", k, cur.Generation, cur.Status)
	})
	t.Logf("rollout of %d pods at maxUnavailable 1 on the real kubelet: %v", n, time.Since(start).Round(100*time.Millisecond))
	w.Stop()
	<-watched
	for _, m := range premature {
		t.Errorf("status ahead of the pods: %s", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if events == 0 {
		t.Fatal("no pod event watched")
	}
	if worst > 1 {
		t.Errorf("%d pods had their sidecar replaced at once (%s), maxUnavailable is 1", worst, worstAt)
	}
	for _, p := range listRealPods(t, "rn-budget") {
		if st := sidecar.ContainerStatus(p, "sidecar1"); st.RestartCount != before[p.Name].RestartCount+1 {
			t.Errorf("pod %s sidecar1 restartCount %d, want %d", p.Name, st.RestartCount, before[p.Name].RestartCount+1)
		}
	}
}
