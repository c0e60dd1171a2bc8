package apps

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAsSidecarSet(t *testing.T) {
	for _, tc := range []struct {
		name            string
		annotations     map[string]string
		wantAnnotations map[string]string
	}{
		{name: "no annotations"},
		{name: "canary base of the same namespace",
			annotations:     map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: "logs-base"},
			wantAnnotations: map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: "team-a.logs-base"}},
		{name: "empty base kept empty",
			annotations:     map[string]string{SidecarSetBaseAnnotation: ""},
			wantAnnotations: map[string]string{SidecarSetBaseAnnotation: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &NamespacedSidecarSet{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "logs", UID: "u", Generation: 2,
					Labels: map[string]string{"app": "logs"}, Annotations: tc.annotations},
				Spec: SidecarSetSpec{
					Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}},
				},
				Status: SidecarSetStatus{MatchedPods: 4},
			}
			before := n.DeepCopy()
			want := &SidecarSet{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a.logs", UID: "u", Generation: 2,
					Labels: map[string]string{"app": "logs"}, Annotations: tc.wantAnnotations},
				Spec: SidecarSetSpec{
					Selector:  &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Namespace: "team-a",
				},
				Status: SidecarSetStatus{MatchedPods: 4},
			}
			if diff := cmp.Diff(want, n.AsSidecarSet()); diff != "" {
				t.Errorf("AsSidecarSet (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, n); diff != "" {
				t.Errorf("AsSidecarSet changed its receiver (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSplitNamespacedName(t *testing.T) {
	for _, tc := range []struct {
		name, namespace, local string
		ok                     bool
	}{
		{name: "logs"},
		{name: NamespacedName("team-a", "logs"), namespace: "team-a", local: "logs", ok: true},
	} {
		// Only ok says anything of a cluster SidecarSet's name.
		if ns, local, ok := SplitNamespacedName(tc.name); ok != tc.ok || (ok && (ns != tc.namespace || local != tc.local)) {
			t.Errorf("SplitNamespacedName(%q) = %q, %q, %v; want %q, %q, %v", tc.name, ns, local, ok, tc.namespace, tc.local, tc.ok)
		}
	}
}
