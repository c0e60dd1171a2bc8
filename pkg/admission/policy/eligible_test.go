package policy

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestEligibleCELIsPodActive: the eligible match condition, without excluded namespaces, and
// apps.PodActive agree on pods of every phase, deleted or not.
func TestEligibleCELIsPodActive(t *testing.T) {
	fail := admissionregistrationv1.Fail
	cp := compilePolicy(t, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "eligible"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{FailurePolicy: &fail,
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "eligible", Expression: eligibleCEL(nil)}}},
	})
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
		ctx := cp.compiler.CreateContext(context.Background())
		attrs := admission.NewAttributesRecord(pod, nil, podGVK, pod.Namespace, pod.Name, podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
		r := cp.matcher.Match(ctx, &admission.VersionedAttributes{Attributes: attrs, VersionedKind: podGVK, VersionedObject: pod}, nil, nil)
		if r.Error != nil {
			t.Fatalf("%q deleting %v: %v", tc.phase, tc.deleting, r.Error)
		}
		if active := apps.PodActive(tc.phase, tc.deleting); r.Matches != tc.want || active != tc.want {
			t.Errorf("%q deleting %v: CEL %v, apps.PodActive %v; want %v", tc.phase, tc.deleting, r.Matches, active, tc.want)
		}
	}
}
