package sidecarset

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		{"policy", v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled", Policy: "sidecarset-a"}, metav1.ConditionTrue, "Compiled", "sidecarset-a"},
		{"webhook", v1alpha1.RolloutInjection{Path: "Webhook", Reason: "InjectionRevision", Message: "spec.injectionStrategy.revision chooses"}, metav1.ConditionFalse, "InjectionRevision", "webhook injects new pods: spec.injectionStrategy.revision"},
		{"none", v1alpha1.RolloutInjection{Path: "None", Reason: "InjectionPaused", Message: "injectionStrategy.paused is set"}, metav1.ConditionFalse, "InjectionPaused", "no pod is injected"},
		{"no reason", v1alpha1.RolloutInjection{Path: "Webhook"}, metav1.ConditionFalse, "Unknown", "webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := injectionCondition(&tc.in, 7)
			if c.Type != ConditionInjectedByPolicy || c.Status != tc.status || c.Reason != tc.reason || c.ObservedGeneration != 7 || !strings.Contains(c.Message, tc.messageHas) {
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
	setInjectionCondition(&st, &v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled"}, 1, t0)
	setInjectionCondition(&st, &v1alpha1.RolloutInjection{Path: "Policy", Reason: "Compiled"}, 2, t1)
	if len(st.Conditions) != 1 || !st.Conditions[0].LastTransitionTime.Equal(&t0) || st.Conditions[0].ObservedGeneration != 2 {
		t.Fatalf("unchanged status: %+v", st.Conditions)
	}
	setInjectionCondition(&st, &v1alpha1.RolloutInjection{Path: "Webhook", Reason: "InjectionRevision"}, 3, t2)
	if len(st.Conditions) != 1 || !st.Conditions[0].LastTransitionTime.Equal(&t2) || st.Conditions[0].Status != metav1.ConditionFalse {
		t.Fatalf("changed status: %+v", st.Conditions)
	}
}
