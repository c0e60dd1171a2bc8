package sidecarset

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/admission/injection"
	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var (
	t0         = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	testScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		install.Install(s)
		return s
	}()
)

const upgradeSidecarSet = `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: ss, resourceVersion: "100"}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: log
    image: log:1
  - name: proxy
    image: proxy:1
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}
  initContainers:
  - name: init
    image: init:1
  - name: agent
    image: agent:1
    restartPolicy: Always
  patchPodMetadata:
  - annotations: {team: sidecars}
    patchPolicy: Overwrite
`

func newSidecarSet(t *testing.T, doc string, edit func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict([]byte(doc), ss); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ss)
	}
	testScheme.Default(ss)
	h, err := hash.Of(&ss.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ss.Annotations = map[string]string{sidecar.HashAnnotation: h.WithImage, sidecar.HashWithoutImageAnnotation: h.WithoutImage}
	ss.Status.LatestRevision = "ss-" + h.WithImage[:5]
	return ss
}

// injectedPod injects ss into a one-container pod and plays the kubelet: every container runs
// its spec image and is ready.
func injectedPod(t *testing.T, ss *v1alpha1.SidecarSet) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid", Generation: 1, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	res, err := injection.Inject(injection.Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{ss}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Pod.DeepCopy()
	out.Status.Phase = corev1.PodRunning
	out.Status.ObservedGeneration = out.Generation
	out.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	status := func(c corev1.Container) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha256:" + c.Image,
			ContainerID: "containerd://" + c.Name + "-0", Ready: true}
	}
	for _, c := range out.Spec.Containers {
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, status(c))
	}
	for _, c := range out.Spec.InitContainers {
		out.Status.InitContainerStatuses = append(out.Status.InitContainerStatuses, status(c))
	}
	return out
}

func images(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		out[c.Name] = c.Image
	}
	return out
}

func TestUpgradePodChangesOnlyImages(t *testing.T) {
	v1 := newSidecarSet(t, upgradeSidecarSet, nil)
	pod := injectedPod(t, v1)
	v2 := newSidecarSet(t, upgradeSidecarSet, func(ss *v1alpha1.SidecarSet) {
		ss.ResourceVersion = "200"
		ss.Spec.Containers[0].Image = "log:2"
		ss.Spec.Containers[1].Image = "proxy:2"
		ss.Spec.InitContainers[0].Image = "init:2" // plain init container: injection only
		ss.Spec.InitContainers[1].Image = "agent:2"
	})
	if got := rollout.Plan(v2, []*rollout.Pod{rollout.NewPod(pod)}); len(got.Upgrade) != 1 {
		t.Fatalf("plan upgrades %d pods, want 1: %+v", len(got.Upgrade), got.Pods)
	}
	before := pod.DeepCopy()
	changed, err := UpgradePod(pod, v2, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"agent", "log", "proxy-2"}; !equalStrings(changed, want) {
		t.Errorf("changed = %v, want %v", changed, want)
	}
	want := images(before)
	want["log"], want["proxy-2"], want["agent"] = "log:2", "proxy:2", "agent:2"
	if got := images(pod); !equalMaps(got, want) {
		t.Errorf("images = %v, want %v", got, want)
	}
	// Nothing but images and annotations changed.
	a, b := before.DeepCopy(), pod.DeepCopy()
	for _, p := range []*corev1.Pod{a, b} {
		p.Annotations = nil
		for i := range p.Spec.Containers {
			p.Spec.Containers[i].Image = ""
		}
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].Image = ""
		}
	}
	if aj, bj := mustMarshal(t, a), mustMarshal(t, b); aj != bj {
		t.Errorf("the upgrade changed more than images:\n%s\n%s", aj, bj)
	}

	entry, ok := sidecar.PodHashEntry(pod.Annotations, sidecar.HashAnnotation, "ss")
	if !ok || entry.Hash != v2.Annotations[sidecar.HashAnnotation] || entry.ControllerRevision != v2.Status.LatestRevision {
		t.Errorf("hash entry = %+v, want hash %s revision %s", entry, v2.Annotations[sidecar.HashAnnotation], v2.Status.LatestRevision)
	}
	if pod.Annotations[sidecar.HashWithoutImageAnnotation] != before.Annotations[sidecar.HashWithoutImageAnnotation] {
		t.Error("the without-image hash annotation must not be rewritten")
	}
	states, err := sidecar.ParseInPlaceUpdateStates(pod.Annotations[sidecar.InPlaceUpdateStateAnnotation])
	if err != nil || states["ss"] == nil {
		t.Fatalf("in-place state: %v %v", states, err)
	}
	rec := states["ss"].LastContainerStatuses
	if len(rec) != 3 || rec["log"].ContainerID != "containerd://log-0" || rec["log"].ImageID != "sha256:log:1" ||
		rec["log"].PodGeneration != 1 || rec["agent"].ContainerID != "containerd://agent-0" {
		t.Errorf("recorded statuses = %+v", rec)
	}
	if got := pod.Annotations["team"]; got != "sidecars" {
		t.Errorf("patchPodMetadata not re-applied: team=%q", got)
	}
	working := sidecar.WorkingContainers(pod.Annotations)
	if working["proxy"] != "proxy-2" || pod.Annotations[sidecar.VersionAnnotation("proxy-2")] != "200" ||
		pod.Annotations[sidecar.VersionAltAnnotation("proxy-1")] != "200" {
		t.Errorf("hot-upgrade annotations: working=%v version/proxy-2=%q versionalt/proxy-1=%q", working,
			pod.Annotations[sidecar.VersionAnnotation("proxy-2")], pod.Annotations[sidecar.VersionAltAnnotation("proxy-1")])
	}

	// Until the kubelet restarts them, the changed containers are not upgraded.
	pod.Generation++
	for _, c := range changed {
		if rollout.ContainerUpgraded(rollout.NewPod(pod), "ss", c) {
			t.Errorf("%s counts as upgraded before the kubelet restarted it", c)
		}
	}
	again, err := UpgradePod(pod.DeepCopy(), v2, t0.Add(2*time.Minute))
	if err != nil || len(again) != 0 {
		t.Errorf("upgrading an upgraded pod again changed %v (%v)", again, err)
	}
}

func TestResetPod(t *testing.T) {
	v1 := newSidecarSet(t, upgradeSidecarSet, nil)
	pod := injectedPod(t, v1)
	v2 := newSidecarSet(t, upgradeSidecarSet, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[1].Image = "proxy:2" })
	if _, err := UpgradePod(pod, v2, t0); err != nil {
		t.Fatal(err)
	}
	if got := ResetPod(pod, v2, t0); len(got) != 1 || got[0] != "proxy-1" {
		t.Fatalf("reset %v, want [proxy-1]", got)
	}
	if img := sidecar.FindPodContainer(pod, "proxy-1").Image; img != "empty:1" {
		t.Errorf("proxy-1 image = %s, want the empty image", img)
	}
	if pod.Annotations[sidecar.VersionAnnotation("proxy-1")] != "0" || pod.Annotations[sidecar.VersionAltAnnotation("proxy-2")] != "0" {
		t.Error("reset must set version/idle and versionalt/working to 0")
	}
	if got := ResetPod(pod, v2, t0); len(got) != 0 {
		t.Errorf("second reset changed %v", got)
	}
}

func TestUpgradableCondition(t *testing.T) {
	withCondition := func(status corev1.ConditionStatus, msg string) *corev1.PodCondition {
		reason := sidecar.UpgradableReason
		if status == corev1.ConditionFalse {
			reason = sidecar.NotUpgradableReason
		}
		return &corev1.PodCondition{Type: sidecar.UpgradableCondition,
			Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
	}
	tests := []struct {
		name       string
		current    *corev1.PodCondition
		upgradable bool
		status     corev1.ConditionStatus
		message    string
		changed    bool
	}{
		{name: "new true", upgradable: true, status: corev1.ConditionTrue, message: `{"ss":true}`, changed: true},
		{name: "new false", upgradable: false, status: corev1.ConditionFalse, message: `{"ss":false}`, changed: true},
		{name: "unchanged", current: withCondition(corev1.ConditionTrue, `{"ss":true}`), upgradable: true, status: corev1.ConditionTrue, message: `{"ss":true}`},
		{name: "other sidecarset false", current: withCondition(corev1.ConditionFalse, `{"other":false}`), upgradable: true,
			status: corev1.ConditionFalse, message: `{"other":false,"ss":true}`, changed: true},
		{name: "flip to false", current: withCondition(corev1.ConditionTrue, `{"other":true,"ss":true}`), upgradable: false,
			status: corev1.ConditionFalse, message: `{"other":true,"ss":false}`, changed: true},
		{name: "foreign message", current: withCondition(corev1.ConditionTrue, `not json`), upgradable: true,
			status: corev1.ConditionTrue, message: `{"ss":true}`, changed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := t0.Add(time.Hour)
			cond, changed := UpgradableCondition(tt.current, "ss", tt.upgradable, now)
			if cond.Status != tt.status || cond.Message != tt.message || changed != tt.changed {
				t.Errorf("got %s %s changed=%v, want %s %s changed=%v", cond.Status, cond.Message, changed, tt.status, tt.message, tt.changed)
			}
			wantReason := sidecar.UpgradableReason
			if tt.status == corev1.ConditionFalse {
				wantReason = sidecar.NotUpgradableReason
			}
			if cond.Reason != wantReason {
				t.Errorf("reason = %s, want %s", cond.Reason, wantReason)
			}
			keepsTime := tt.current != nil && tt.current.Status == tt.status
			if keepsTime != cond.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("lastTransitionTime = %v (status kept: %v)", cond.LastTransitionTime, keepsTime)
			}
		})
	}
}

func TestCachePodKeepsWhatPlanningReads(t *testing.T) {
	ss := newSidecarSet(t, upgradeSidecarSet, nil)
	pod := injectedPod(t, ss)
	pod.Status.Conditions = append(pod.Status.Conditions,
		corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionFalse,
			Reason: sidecar.NotUpgradableReason, Message: `{"ss":false}`},
		corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, Message: "dropped"})
	obj, err := CachePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	cached := obj.(*rollout.Pod)
	if again, _ := CachePod(cached); again != obj {
		t.Error("CachePod must pass its own output unchanged")
	}
	cond, changed := UpgradableCondition(cached.Upgradable, "ss", false, t0)
	if changed || cond.Message != `{"ss":false}` {
		t.Errorf("the SidecarSetUpgradable message must be cached: %v %s", changed, cond.Message)
	}
	v2 := newSidecarSet(t, upgradeSidecarSet, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Image = "log:2" })
	for _, s := range []*v1alpha1.SidecarSet{ss, v2} {
		res := rollout.Plan(s, []*rollout.Pod{cached})
		if res.Counts.Matched != 1 || len(res.Pods) != 1 {
			t.Fatalf("plan of %s on the cached pod: %+v", s.Spec.Containers[0].Image, res.Counts)
		}
	}
	if res := rollout.Plan(v2, []*rollout.Pod{cached}); len(res.Upgrade) != 1 || res.Counts.Updated != 0 {
		t.Errorf("the cached pod must be upgradable to v2: %+v %+v", res.Counts, res.Pods[0])
	}
}

func mustMarshal(t *testing.T, v interface{}) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
