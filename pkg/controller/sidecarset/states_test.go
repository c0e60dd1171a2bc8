package sidecarset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

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
// the upgrade; a verdict written meanwhile is kept, also when it is written between the
// deferred write's read and its patch (the patch conflicts, the write reads again).
func TestUpgradableWaitsForQuiet(t *testing.T) {
	verdict := func(status corev1.ConditionStatus, msg string) *corev1.PodCondition {
		reason := sidecar.UpgradableReason
		if status == corev1.ConditionFalse {
			reason = sidecar.NotUpgradableReason
		}
		return &corev1.PodCondition{Type: sidecar.UpgradableCondition, Status: status, Reason: reason, Message: msg}
	}
	tests := []struct {
		name      string
		condition *corev1.PodCondition // pod a's before the round
		meanwhile *corev1.PodCondition // written on pod a after the cache read it, before the quiet round
		racing    *corev1.PodCondition // written on pod a between the deferred write's read and patch
		atUpgrade int                  // status patches of the upgrading round
		status    corev1.ConditionStatus
		message   string
		quiet     int // status patches in all once quiet
	}{
		{name: "no condition", status: corev1.ConditionTrue, message: `{"ss":true}`, quiet: 1},
		{name: "another SidecarSet's verdict", condition: verdict(corev1.ConditionFalse, `{"other":false}`),
			status: corev1.ConditionFalse, message: `{"other":false,"ss":true}`, quiet: 1},
		{name: "its own false", condition: verdict(corev1.ConditionFalse, `{"ss":false}`), atUpgrade: 1,
			status: corev1.ConditionTrue, message: `{"ss":true}`, quiet: 1},
		{name: "its false written meanwhile", meanwhile: verdict(corev1.ConditionFalse, `{"ss":false}`),
			status: corev1.ConditionFalse, message: `{"ss":false}`},
		{name: "another SidecarSet's verdict written meanwhile", meanwhile: verdict(corev1.ConditionFalse, `{"other":false}`),
			status: corev1.ConditionFalse, message: `{"other":false,"ss":true}`, quiet: 1},
		{name: "another SidecarSet's verdict written at the write", racing: verdict(corev1.ConditionTrue, `{"other":true}`),
			status: corev1.ConditionTrue, message: `{"other":true,"ss":true}`, quiet: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, ss := newImage(t)
			h := newHarness(t, old, ss)
			pods := corev1.SchemeGroupVersion.WithResource("pods")
			write := func(c *corev1.PodCondition) { // as kube-apiserver would: a new resourceVersion
				obj, err := h.kube.Tracker().Get(pods, "default", "a") // not the client: a reactor may call it
				if err != nil {
					t.Fatal(err)
				}
				p := obj.(*corev1.Pod).DeepCopy()
				setPodCondition(p, *c)
				rv, _ := strconv.Atoi(p.ResourceVersion)
				p.ResourceVersion = strconv.Itoa(rv + 1)
				if err := h.kube.Tracker().Update(pods, p, "default"); err != nil {
					t.Fatal(err)
				}
			}
			if tt.condition != nil {
				write(tt.condition)
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
			h.sync()
			if tt.meanwhile != nil {
				write(tt.meanwhile)
			}
			if tt.racing != nil {
				once := false
				h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() == "status" && !once {
						once = true
						write(tt.racing)
					}
					return false, nil, nil
				})
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
			if n := count(h.kube, "patch", "pods", "status"); n != tt.quiet {
				t.Errorf("%d status patches once quiet, want %d", n, tt.quiet)
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

// TestUpgradableWriteFailureLooksAgain: a deferred verdict whose write fails makes the round
// look again soon, though nothing else is left to do, and the next round writes it.
func TestUpgradableWriteFailureLooksAgain(t *testing.T) {
	old, ss := newImage(t)
	ss.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	h := newHarness(t, old, ss)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} { // the kubelet restarts both sidecars
		p := h.pod(name)
		for i := range p.Status.ContainerStatuses {
			st := &p.Status.ContainerStatuses[i]
			if st.Name == "log" {
				st.Image, st.ImageID, st.ContainerID, st.RestartCount = "log:2", "sha256:log:2", "containerd://log-1", 1
			}
		}
		p.Generation++ // kube-apiserver's for the image change (the fake's patch keeps it)
		p.Status.ObservedGeneration = p.Generation
		if err := h.kube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "default"); err != nil {
			t.Fatal(err)
		}
	}
	h.sync()
	fail := true
	h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && fail {
			return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
		}
		return false, nil, nil
	})
	h.clock.Step(stateQuiet)
	if _, err := h.round(); err != nil { // the upgrade states are written, the verdicts fail
		t.Fatal(err)
	}
	h.sync()
	h.clock.Step(time.Second)
	after, err := h.round() // nothing else is left: the verdicts fail again
	if err != nil {
		t.Fatal(err)
	}
	if after == 0 {
		t.Fatal("a round whose verdict writes failed does not look again")
	}
	if c := upgradableCondition(h.pod("a")); c != nil {
		t.Fatalf("pod a has a condition though its write failed: %+v", c)
	}
	fail = false
	h.clock.Step(after)
	h.sync()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if c := upgradableCondition(h.pod(name)); c == nil || c.Message != `{"ss":true}` {
			t.Errorf("pod %s's condition after the failure: %+v, want {\"ss\":true}", name, c)
		}
	}
}

// TestByNamespaceTurns: namespaces take turns, each keeping its pods' order.
func TestByNamespaceTurns(t *testing.T) {
	tests := []struct {
		in, want []string // namespace/name
	}{
		{in: nil, want: nil},
		{in: []string{"a/1", "a/2"}, want: []string{"a/1", "a/2"}},
		{in: []string{"a/1", "a/2", "a/3", "b/1", "c/1", "b/2"}, want: []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"}},
	}
	for _, tt := range tests {
		var pods []*rollout.Pod
		for _, k := range tt.in {
			ns, name, _ := strings.Cut(k, "/")
			pods = append(pods, &rollout.Pod{Namespace: ns, Name: name})
		}
		var got []string
		for _, p := range byNamespaceTurns(pods, func(p *rollout.Pod) string { return p.Namespace }) {
			got = append(got, p.Namespace+"/"+p.Name)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("byNamespaceTurns(%v) (-want +got):\n%s", tt.in, diff)
		}
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

// TestTenantDoesNotHoldBackVerdicts: a namespace editor's pods that claim an in-place upgrade by
// a cluster SidecarSet (the record annotation is theirs to write) come before another
// namespace's upgraded pods in the plan: the other namespace's verdicts still come within the
// first turns, so that the verdict rate (verdictWritesBurst a round) reaches them at once.
func TestTenantDoesNotHoldBackVerdicts(t *testing.T) {
	_, ss := newImage(t)
	var plan rollout.Result
	add := func(ns, name string) {
		p := inplacetest.InjectedPod(t, ss)
		p.Namespace, p.Name, p.UID = ns, name, types.UID(ns+"/"+name)
		sidecar.RecordInPlaceUpdate(p.Annotations, "ss", "h", t0, []string{"log"}, map[string]sidecar.InPlaceUpdateContainerStatus{"log": {}})
		plan.Pods = append(plan.Pods, rollout.PodPlan{Pod: rollout.NewPod(p), State: v1alpha1.PodRolloutUpdated})
	}
	for i := range 3 * verdictWritesBurst {
		add("tenant", fmt.Sprintf("forged-%d", i))
	}
	for i := range 3 {
		add("team", fmt.Sprintf("upgraded-%d", i))
	}
	due := pendingUpgradable("ss", &plan, nil)
	if len(due) != len(plan.Pods) {
		t.Fatalf("%d pods pending, want %d", len(due), len(plan.Pods))
	}
	team := 0
	for _, p := range due[:6] {
		if p.Namespace == "team" {
			team++
		}
	}
	if team != 3 {
		t.Errorf("%d of team's 3 pods among the first 6 verdicts, want 3", team)
	}
}
