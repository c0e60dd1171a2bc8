package sidecarset

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/view"
)

// TestRoundLapsesANamespaceHold: at maxUnavailable 1, pod a (namespace default) is upgraded first
// and never restarts (this fake has no kubelet), so it holds the one place while pod b, in
// namespace team-b, waits. After rollout.NamespaceHoldLapse, a counts against its namespace's
// share alone: b is upgraded, and the SidecarSet gets a NamespaceHoldLapsed event. A new leader
// takes over in between: it goes on from when the hold began (the status records it), and does
// not start measuring again.
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
	for i, after := range []time.Duration{0, time.Minute, rollout.NamespaceHoldLapse - time.Minute - time.Second} {
		h.clock.Step(after)
		if i == 2 {
			h.newTerm()
		}
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
		got, err := view.Rollout{Pods: h.c.pods, Clock: h.clock}.View(context.Background(), internal)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got.Status.Pods {
			if p.Name == "b" {
				return v1alpha1.RolloutPod{State: v1alpha1.PodRolloutState(p.State), Reason: p.Reason, Message: p.Message}
			}
		}
		t.Fatal("pod b is not in the view")
		return v1alpha1.RolloutPod{}
	}
	holds := h.stored().Status.NamespaceHolds
	if want := []v1alpha1.NamespaceHold{{Namespace: "default", Since: metav1.NewTime(t0)}}; !cmp.Equal(want, holds) {
		t.Errorf("status.namespaceHolds %+v, want %+v", holds, want)
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
	if holds := h.stored().Status.NamespaceHolds; len(holds) != 1 || !holds[0].Lapsed {
		t.Errorf("status.namespaceHolds %+v, want default's hold lapsed", holds)
	}
	events := strings.Join(h.drain(), "\n")
	if !strings.Contains(events, "Warning "+ReasonNamespaceHoldLapsed+" the pods of namespace default held every place of maxUnavailable (1) for 10m0s") {
		t.Errorf("events %s, want a NamespaceHoldLapsed warning", events)
	}
}
