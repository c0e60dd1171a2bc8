package apps

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodActive: only a pod that is neither terminated nor being deleted is active.
func TestPodActive(t *testing.T) {
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
		{corev1.PodRunning, true, false},
		{corev1.PodPending, true, false},
		{corev1.PodSucceeded, true, false},
	} {
		if got := PodActive(tc.phase, tc.deleting); got != tc.want {
			t.Errorf("PodActive(%q, %v) = %v, want %v", tc.phase, tc.deleting, got, tc.want)
		}
	}
}
