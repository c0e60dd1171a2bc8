package condition

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestInjectionCondition(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         v1alpha1.RolloutInjection
		status     metav1.ConditionStatus
		reason     string
		messageHas string
	}{
		{"policy", v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled", Policy: "sidecarset-a"}, metav1.ConditionTrue, "Policy", "sidecarset-a"},
		{"webhook", v1alpha1.RolloutInjection{Path: "Webhook", Reason: "InjectionRevision", Message: "spec.injectionStrategy.revision chooses"}, metav1.ConditionTrue, "Webhook", "webhook injects new pods (InjectionRevision: spec.injectionStrategy.revision"},
		{"none", v1alpha1.RolloutInjection{Path: "None", Reason: "InjectionPaused", Message: "injectionStrategy.paused is set"}, metav1.ConditionFalse, "InjectionPaused", "no new pod is injected"},
		{"no path", v1alpha1.RolloutInjection{}, metav1.ConditionFalse, "Unknown", "no new pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := injectionCondition(&tc.in, 7)
			if c.Type != Injected || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 7 || !strings.Contains(c.Message, tc.messageHas) {
				t.Errorf("got %+v, want status %s reason %s, message with %q", c, tc.status, tc.reason, tc.messageHas)
			}
		})
	}
}

// TestInjectionConditionTransition: the transition time moves only when the status changes.
func TestInjectionConditionTransition(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	t2 := metav1.NewTime(t0.Add(2 * time.Minute))
	var st v1alpha1.SidecarSetStatus
	SetInjection(&st, &v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled"}, 1, t0)
	SetInjection(&st, &v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled"}, 2, t1)
	if len(st.Conditions) != 1 || !st.Conditions[0].LastTransitionTime.Equal(&t0) || st.Conditions[0].ObservedGeneration != 2 {
		t.Fatalf("unchanged status: %+v", st.Conditions)
	}
	SetInjection(&st, &v1alpha1.RolloutInjection{Path: "None", Reason: "InjectionPaused"}, 3, t2)
	if len(st.Conditions) != 1 || !st.Conditions[0].LastTransitionTime.Equal(&t2) || st.Conditions[0].Status != metav1.ConditionFalse {
		t.Fatalf("changed status: %+v", st.Conditions)
	}
}

// TestWideningCondition: True while the SidecarSet widens the webhooks, False once it no longer
// does, absent on one that never did.
func TestWideningCondition(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	w := apps.Widening{Reason: apps.WideningSelectorRequiresNoLabel, CallsServer: true}
	var st v1alpha1.SidecarSetStatus
	for _, step := range []struct {
		widened bool
		want    metav1.ConditionStatus // "" for no condition
	}{{false, ""}, {true, metav1.ConditionTrue}, {false, metav1.ConditionFalse}} {
		SetWidening(&st, w, step.widened, 1, now)
		c := meta.FindStatusCondition(st.Conditions, WebhookReceivesEveryPod)
		switch {
		case step.want == "" && c != nil, step.want != "" && (c == nil || c.Status != step.want):
			t.Errorf("widened %v: condition %+v, want status %q", step.widened, c, step.want)
		case step.widened && !strings.Contains(c.Message, "calls this server"):
			t.Errorf("message %q", c.Message)
		}
	}
}

// TestInjectionFromCondition: every replica reads back from the Injected condition the path the
// leader decided, as the leader's plan gave it; not a condition of an older generation.
func TestInjectionFromCondition(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   v1alpha1.RolloutInjection
	}{
		{"policy", v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled", Message: "injected by MutatingAdmissionPolicy sidecarsets-app-v0-1", Policy: "sidecarsets-app-v0-1"}},
		{"webhook", v1alpha1.RolloutInjection{Path: "Webhook", Reason: "TransferEnv", Message: "transferEnv reads the pod's other containers"}},
		{"webhook, a message with colons and parentheses", v1alpha1.RolloutInjection{Path: "Webhook", Reason: "TooLarge",
			Message: "group policy sidecarsets-app-v0 (full): about 100000 characters"}},
		{"webhook mode", v1alpha1.RolloutInjection{Path: "Webhook", Reason: "WebhookMode", Message: "the server runs with --injection=webhook"}},
		{"paused", v1alpha1.RolloutInjection{Path: "None", Reason: "InjectionPaused", Message: "injectionStrategy.paused is set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			SetInjection(&ss.Status, &tc.in, 3, metav1.Now())
			got, ok := InjectionFrom(ss)
			if !ok || *got != tc.in {
				t.Errorf("read back %+v (%v), the leader decided %+v", got, ok, tc.in)
			}
			ss.Generation = 4 // changed since the leader decided
			if got, ok := InjectionFrom(ss); ok {
				t.Errorf("a condition of generation 3 read back for generation 4: %+v", got)
			}
		})
	}
	if got, ok := InjectionFrom(&v1alpha1.SidecarSet{}); ok {
		t.Errorf("no condition read back as %+v", got)
	}
}
