package sidecarset

import (
	"context"
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

// TestRoundWritesUpgradeStates: a round writes the upgraded pod's state with its images; the
// waiting pod's state is written alone once the rollout has upgraded no pod for stateQuiet (the
// round asks to be run again then), and a round that changes nothing writes nothing.
func TestRoundWritesUpgradeStates(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	after, err := h.round()
	if err != nil {
		t.Fatal(err)
	}
	if after != 3*time.Second {
		t.Errorf("the round that upgraded a pod asks to run again after %s, want 3s (the states it left)", after)
	}
	h.sync()
	latest := h.stored().Status.LatestRevision
	oldRev := old.Status.LatestRevision
	states := func() map[string]sidecar.UpgradeState {
		got := map[string]sidecar.UpgradeState{}
		for _, name := range []string{"a", "b"} {
			p, err := h.kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got[name] = sidecar.UpgradeStates(p.Annotations[sidecar.UpgradeStateAnnotation])["ss"]
		}
		return got
	}
	upgrading := sidecar.UpgradeState{Revision: latest, State: "Upgrading", Reason: "Restarting"}
	if diff := cmp.Diff(map[string]sidecar.UpgradeState{"a": upgrading, "b": {}}, states()); diff != "" {
		t.Errorf("upgrade states while the rollout upgrades (-want +got):\n%s", diff)
	}
	h.clock.Step(time.Second)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if got := states()["b"]; got != (sidecar.UpgradeState{}) {
		t.Errorf("a round 1s after the upgrade wrote the waiting pod's state %+v", got)
	}
	h.clock.Step(2 * time.Second)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	h.sync()
	want := map[string]sidecar.UpgradeState{"a": upgrading, "b": {Revision: oldRev, State: "Waiting", Reason: "MaxUnavailable"}}
	if diff := cmp.Diff(want, states()); diff != "" {
		t.Errorf("upgrade states once the rollout upgraded nothing for 3s (-want +got):\n%s", diff)
	}
	writes := h.stateWrites()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if n := h.stateWrites() - writes; n != 0 {
		t.Errorf("a round that changed nothing wrote %d states", n)
	}
}

// TestUpgradableWaitsForQuiet: the pod a round upgrades gets its first SidecarSetUpgradable
// verdict ({"ss":true}, True) only once the rollout has upgraded no pod for stateQuiet, in one
// status patch; a pod whose condition already holds the SidecarSet's false gets its true with
// the upgrade; a verdict written meanwhile is kept.
func TestUpgradableWaitsForQuiet(t *testing.T) {
	notUpgradable := corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionFalse,
		Reason: sidecar.NotUpgradableReason, Message: `{"ss":false}`}
	otherFalse := corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionFalse,
		Reason: sidecar.NotUpgradableReason, Message: `{"other":false}`}
	tests := []struct {
		name       string
		condition  *corev1.PodCondition // pod a's before the round
		meanwhile  *corev1.PodCondition // written on pod a after the round, before the quiet one
		atUpgrade  int                  // status patches of the upgrading round
		status     corev1.ConditionStatus
		message    string
		afterQuiet int // status patches in all once quiet
	}{
		{name: "no condition", atUpgrade: 0, status: corev1.ConditionTrue, message: `{"ss":true}`, afterQuiet: 1},
		{name: "another SidecarSet's verdict", condition: &otherFalse, atUpgrade: 0, status: corev1.ConditionFalse,
			message: `{"other":false,"ss":true}`, afterQuiet: 1},
		{name: "its own false", condition: &notUpgradable, atUpgrade: 1, status: corev1.ConditionTrue, message: `{"ss":true}`, afterQuiet: 1},
		{name: "false written meanwhile", meanwhile: &notUpgradable, atUpgrade: 0, status: corev1.ConditionFalse,
			message: `{"ss":false}`, afterQuiet: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, ss := newImage(t)
			h := newHarness(t, old, ss)
			setCondition := func(c *corev1.PodCondition) {
				p := h.pod("a")
				setPodCondition(p, *c)
				if err := h.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "default"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.condition != nil {
				setCondition(tt.condition)
				h.pod("b") // b stays as injected
				h.sync()
			}
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			if inplacetest.Images(h.pod("a"))["log"] != "log:2" {
				t.Fatal("the round did not upgrade pod a")
			}
			if n := count(h.kube, "patch", "pods", "status"); n != tt.atUpgrade {
				t.Errorf("%d status patches with the upgrade, want %d", n, tt.atUpgrade)
			}
			if tt.meanwhile != nil {
				// The writer of the verdict meanwhile changes pod a after the cache read it.
				h.sync()
				setCondition(tt.meanwhile)
			} else {
				h.sync()
			}
			h.clock.Step(time.Second)
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			if n := count(h.kube, "patch", "pods", "status"); n != tt.atUpgrade {
				t.Errorf("a round 1s after the upgrade: %d status patches, want %d", n, tt.atUpgrade)
			}
			h.clock.Step(2 * time.Second)
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			got := upgradableCondition(h.pod("a"))
			if got == nil || got.Status != tt.status || got.Message != tt.message {
				t.Errorf("pod a's condition once quiet: %+v, want %s %s", got, tt.status, tt.message)
			}
			if n := count(h.kube, "patch", "pods", "status"); n != tt.afterQuiet {
				t.Errorf("%d status patches once quiet, want %d", n, tt.afterQuiet)
			}
			if c := upgradableCondition(h.pod("b")); c != nil {
				t.Errorf("pod b, not upgraded, has a condition: %+v", c)
			}
			h.sync()
			before := count(h.kube, "patch", "pods", "status")
			if _, err := h.round(); err != nil {
				t.Fatal(err)
			}
			if n := count(h.kube, "patch", "pods", "status") - before; n != 0 {
				t.Errorf("a round after the verdict wrote %d status patches", n)
			}
		})
	}
}

// TestPendingUpgradable: a pod waits for its first verdict when the SidecarSet upgraded an image
// in it in place and its condition holds no verdict of that SidecarSet.
func TestPendingUpgradable(t *testing.T) {
	_, ss := newImage(t)
	upgraded := func(p *corev1.Pod) {
		sidecar.RecordInPlaceUpdate(p.Annotations, "ss", "h", t0, []string{"log"}, map[string]sidecar.InPlaceUpdateContainerStatus{"log": {ImageID: "sha256:log:1"}})
	}
	withMessage := func(msg string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			upgraded(p)
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: corev1.ConditionTrue, Message: msg})
		}
	}
	tests := []struct {
		name  string
		pod   func(*corev1.Pod)
		state v1alpha1.PodRolloutState
		skip  bool
		want  bool
	}{
		{name: "injected, never upgraded", pod: func(*corev1.Pod) {}},
		{name: "upgraded, no condition", pod: upgraded, want: true},
		{name: "upgraded, another SidecarSet's verdict", pod: withMessage(`{"other":true}`), want: true},
		{name: "upgraded, a foreign message", pod: withMessage(`upgradable`), want: true},
		{name: "upgraded, its true", pod: withMessage(`{"ss":true}`)},
		{name: "upgraded, its false", pod: withMessage(`{"ss":false}`)},
		{name: "upgraded, written this round", pod: upgraded, skip: true},
		{name: "upgraded, being deleted", pod: func(p *corev1.Pod) { upgraded(p); p.DeletionTimestamp = &metav1.Time{Time: t0} }},
		{name: "upgraded, not upgradable now", pod: upgraded, state: v1alpha1.PodRolloutNotUpgradable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := inplacetest.InjectedPod(t, ss)
			tt.pod(p)
			plan := &rollout.Result{Pods: []rollout.PodPlan{{Pod: rollout.NewPod(p), State: tt.state}}}
			due := pendingUpgradable("ss", plan, map[string]bool{"default/p": tt.skip})
			if got := len(due) == 1; got != tt.want {
				t.Errorf("pending: %v, want %v", got, tt.want)
			}
		})
	}
}
