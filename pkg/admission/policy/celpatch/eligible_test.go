package celpatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestEligibleCELIsPodActive: the eligible match condition, without excluded namespaces, and
// apps.PodActive agree on pods of every phase, deleted or not.
func TestEligibleCELIsPodActive(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		phase    corev1.PodPhase
		deleting bool
		want     bool
	}{
		{"", false, true},
		{corev1.PodPending, false, true},
		{corev1.PodRunning, false, true},
		{corev1.PodUnknown, false, true},
		{corev1.PodSucceeded, false, false},
		{corev1.PodFailed, false, false},
		{corev1.PodPending, true, false},
		{corev1.PodFailed, true, false},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: tc.phase}}
		if tc.deleting {
			pod.DeletionTimestamp = &now
		}
		matches := policytest.ConditionHolds(t, eligibleCEL(nil), pod)
		if active := apps.PodActive(tc.phase, tc.deleting); matches != tc.want || active != tc.want {
			t.Errorf("%q deleting %v: CEL %v, apps.PodActive %v; want %v", tc.phase, tc.deleting, matches, active, tc.want)
		}
	}
}
