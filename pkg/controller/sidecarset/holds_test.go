package sidecarset

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

func TestNamespaceHolds(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	h := NewNamespaceHolds(clk)
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "ss", Annotations: map[string]string{v1alpha1.SidecarSetHashAnnotation: "h1"}}}
	holding := func(holder string, held map[string]int32) *rollout.Result {
		return &rollout.Result{Holder: holder, Holding: held}
	}
	step := func(d time.Duration, lapsed map[string]bool, plan *rollout.Result) []string {
		t.Helper()
		clk.Step(d)
		return h.observe(ss, lapsed, plan)
	}
	want := func(what string, lapsed map[string]bool) {
		t.Helper()
		if diff := cmp.Diff(lapsed, h.Lapsed(ss)); diff != "" {
			t.Errorf("%s: lapsed (-want +got):\n%s", what, diff)
		}
	}

	step(0, nil, holding("a", map[string]int32{"a": 1}))
	step(rollout.NamespaceHoldLapse-time.Second, nil, holding("a", map[string]int32{"a": 1}))
	want("held for less than the lapse", nil)
	clk.Step(time.Second)
	want("held for the lapse", map[string]bool{"a": true})

	// Another holder starts over.
	step(0, nil, holding("b", map[string]int32{"b": 1}))
	want("another holder", nil)
	step(rollout.NamespaceHoldLapse, nil, holding("b", map[string]int32{"b": 1}))
	lapsed := h.Lapsed(ss)
	if newly := step(0, lapsed, holding("", map[string]int32{"b": 1})); !cmp.Equal(newly, []string{"b"}) {
		t.Errorf("lapsed with the round: %v, want [b]", newly)
	}
	if newly := step(time.Minute, lapsed, holding("", map[string]int32{"b": 1})); len(newly) != 0 {
		t.Errorf("lapsed again: %v", newly)
	}
	want("lapsed while it holds places", map[string]bool{"b": true})

	// A holder that lets go before the lapse starts over when it holds again.
	step(0, lapsed, holding("a", map[string]int32{"a": 1, "b": 1}))
	step(rollout.NamespaceHoldLapse/2, lapsed, holding("", map[string]int32{"b": 1}))
	step(0, lapsed, holding("a", map[string]int32{"a": 1, "b": 1}))
	step(rollout.NamespaceHoldLapse/2, lapsed, holding("a", map[string]int32{"a": 1, "b": 1}))
	want("a let go in between", map[string]bool{"b": true})

	// b's pods are available again: its lapse ends.
	step(0, lapsed, holding("", map[string]int32{"a": 1}))
	want("b holds nothing", nil)

	// A new spec starts over.
	step(0, nil, holding("a", map[string]int32{"a": 1}))
	clk.Step(rollout.NamespaceHoldLapse)
	ss.Annotations[v1alpha1.SidecarSetHashAnnotation] = "h2"
	want("a new spec", nil)
	ss.Annotations[v1alpha1.SidecarSetHashAnnotation] = "h1"
	h.forget(ss.Name)
	want("forgotten", nil)

	var none *NamespaceHolds
	if got := none.Lapsed(ss); got != nil {
		t.Errorf("no holds: %v", got)
	}
}

// TestRoundLapsesANamespaceHold: at maxUnavailable 1, pod a (namespace default) is upgraded first
// and never restarts (this fake has no kubelet), so it holds the one place while pod b, in
// namespace team-b, waits. After rollout.NamespaceHoldLapse, a counts against its namespace's
// share alone: b is upgraded, and the SidecarSet gets a NamespaceHoldLapsed event.
func TestRoundLapsesANamespaceHold(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	b := h.pod("b")
	if err := h.kube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "default", "b"); err != nil {
		t.Fatal(err)
	}
	b.Namespace = "team-b"
	if err := h.kube.Tracker().Add(b); err != nil {
		t.Fatal(err)
	}
	h.sync()
	upgraded := func() (a, b bool) {
		pa, err := h.kube.CoreV1().Pods("default").Get(context.Background(), "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pb, err := h.kube.CoreV1().Pods("team-b").Get(context.Background(), "b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pa.Spec.Containers[0].Image == "log:2", pb.Spec.Containers[0].Image == "log:2"
	}
	for _, after := range []time.Duration{0, time.Minute, rollout.NamespaceHoldLapse - time.Minute - time.Second} {
		h.clock.Step(after)
		if _, err := h.round(); err != nil {
			t.Fatal(err)
		}
		h.sync()
		if a, b := upgraded(); !a || b {
			t.Fatalf("after %s: a upgraded %t, b upgraded %t; want a alone", after, a, b)
		}
	}
	if events := strings.Join(h.drain(), "\n"); strings.Contains(events, ReasonNamespaceHoldLapsed) {
		t.Errorf("a hold lapsed too soon: %s", events)
	}
	viewB := func() v1alpha1.RolloutPod {
		internal := &apps.SidecarSet{}
		if err := v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet(h.stored(), internal, nil); err != nil {
			t.Fatal(err)
		}
		view, err := Viewer{Pods: h.c.pods, Holds: h.c.holds}.View(context.Background(), internal)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range view.Status.Pods {
			if p.Name == "b" {
				return v1alpha1.RolloutPod{State: v1alpha1.PodRolloutState(p.State), Reason: p.Reason, Message: p.Message}
			}
		}
		t.Fatal("pod b is not in the view")
		return v1alpha1.RolloutPod{}
	}
	if got := viewB(); got.Reason != rollout.ReasonMaxUnavailable || !strings.Contains(got.Message, "the pods of namespace default hold every place") {
		t.Errorf("view of b before the lapse: %+v", got)
	}
	h.clock.Step(time.Second)
	if got := viewB(); got.Reason != rollout.ReasonSelected {
		t.Errorf("view of b once the hold lapsed: %+v, want it selected", got)
	}
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if _, b := upgraded(); !b {
		t.Fatal("b not upgraded once a's hold lapsed")
	}
	events := strings.Join(h.drain(), "\n")
	if !strings.Contains(events, "Warning "+ReasonNamespaceHoldLapsed+" the pods of namespace default held every place of maxUnavailable (1) for 10m0s") {
		t.Errorf("events %s, want a NamespaceHoldLapsed warning", events)
	}
}
