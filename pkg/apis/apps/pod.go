package apps

import corev1 "k8s.io/api/core/v1"

// PodActive reports whether injection and in-place upgrade consider a pod in this phase, being
// deleted or not: it is not being deleted and has not terminated (Succeeded or Failed). The
// policy compiler renders the same rule as CEL (eligibleCEL).
func PodActive(phase corev1.PodPhase, deleting bool) bool {
	return !deleting && phase != corev1.PodSucceeded && phase != corev1.PodFailed
}
