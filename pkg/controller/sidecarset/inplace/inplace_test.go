package inplace

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var t0 = inplacetest.T0

// upgrade is Upgrade with the readiness the controller passes.
func upgrade(pod *corev1.Pod, ss *v1alpha1.SidecarSet, now time.Time) ([]string, error) {
	return Upgrade(pod, ss, now, rollout.ReadyAndUpgraded(rollout.NewPod(pod), ss.Name))
}

func TestUpgradeChangesOnlyImages(t *testing.T) {
	v1 := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	pod := inplacetest.InjectedPod(t, v1)
	v2 := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) {
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
	changed, err := upgrade(pod, v2, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"agent", "log", "proxy-2"}, changed); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	want := inplacetest.Images(before)
	want["log"], want["proxy-2"], want["agent"] = "log:2", "proxy:2", "agent:2"
	if diff := cmp.Diff(want, inplacetest.Images(pod)); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
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
	again, err := upgrade(pod.DeepCopy(), v2, t0.Add(2*time.Minute))
	if err != nil || len(again) != 0 {
		t.Errorf("upgrading an upgraded pod again changed %v (%v)", again, err)
	}
}

// TestUpgradeAddsToInjectedList: a pod the SidecarSet manages without listing it (an older
// injector's) gets the SidecarSet added to its injected list, the others kept.
func TestUpgradeAddsToInjectedList(t *testing.T) {
	ss := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	pod := inplacetest.InjectedPod(t, ss)
	pod.Annotations[sidecar.InjectedListAnnotation] = "other"
	if _, err := upgrade(pod, ss, t0); err != nil {
		t.Fatal(err)
	}
	if got, want := pod.Annotations[sidecar.InjectedListAnnotation], "other,ss"; got != want {
		t.Errorf("injected list = %q, want %q", got, want)
	}
}

func TestReset(t *testing.T) {
	v1 := inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	pod := inplacetest.InjectedPod(t, v1)
	v2 := inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[1].Image = "proxy:2" })
	if _, err := upgrade(pod, v2, t0); err != nil {
		t.Fatal(err)
	}
	if got := Reset(pod, v2, t0); len(got) != 1 || got[0] != "proxy-1" {
		t.Fatalf("reset %v, want [proxy-1]", got)
	}
	if img := sidecar.FindPodContainer(pod, "proxy-1").Image; img != "empty:1" {
		t.Errorf("proxy-1 image = %s, want the empty image", img)
	}
	if pod.Annotations[sidecar.VersionAnnotation("proxy-1")] != "0" || pod.Annotations[sidecar.VersionAltAnnotation("proxy-2")] != "0" {
		t.Error("reset must set version/idle and versionalt/working to 0")
	}
	if got := Reset(pod, v2, t0); len(got) != 0 {
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

func mustMarshal(t *testing.T, v interface{}) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestRecordsVerdict(t *testing.T) {
	tests := []struct {
		message string
		want    bool
	}{
		{``, false},
		{`not json`, false},
		{`{}`, false},
		{`{"other":true}`, false},
		{`{"ss":true}`, true},
		{`{"other":true,"ss":false}`, true},
		{`{"ssx":true}`, false},
	}
	for _, tt := range tests {
		if got := RecordsVerdict(tt.message, "ss"); got != tt.want {
			t.Errorf("RecordsVerdict(%q) = %v, want %v", tt.message, got, tt.want)
		}
	}
}
