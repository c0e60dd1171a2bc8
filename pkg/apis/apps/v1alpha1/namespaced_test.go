package v1alpha1

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// namespaced returns a NamespacedSidecarSet with metadata, spec and status all set.
func namespaced(annotations map[string]string) *NamespacedSidecarSet {
	return &NamespacedSidecarSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "logs", UID: "uid-1", ResourceVersion: "42", Generation: 3,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			Labels:            map[string]string{"app": "logs"},
			Annotations:       annotations,
		},
		Spec: SidecarSetSpec{
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers:           []SidecarContainer{{Container: corev1.Container{Name: "log", Image: "log:1"}}},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
		Status: SidecarSetStatus{ObservedGeneration: 3, MatchedPods: 2, LatestRevision: "team-a.logs-abc"},
	}
}

func TestAsSidecarSet(t *testing.T) {
	for _, tc := range []struct {
		name            string
		annotations     map[string]string
		wantAnnotations map[string]string
	}{
		{name: "no annotations"},
		{name: "other annotations kept", annotations: map[string]string{"a": "b", SidecarSetHashAnnotation: "h"},
			wantAnnotations: map[string]string{"a": "b", SidecarSetHashAnnotation: "h"}},
		{name: "canary base of the same namespace",
			annotations:     map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: "logs-base"},
			wantAnnotations: map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: "team-a.logs-base"}},
		{name: "empty base kept empty",
			annotations:     map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: ""},
			wantAnnotations: map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := namespaced(tc.annotations)
			before := n.DeepCopy()
			got := n.AsSidecarSet()

			want := &SidecarSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "SidecarSet"},
				ObjectMeta: *before.ObjectMeta.DeepCopy(),
				Spec:       *before.Spec.DeepCopy(),
				Status:     *before.Status.DeepCopy(),
			}
			want.Name, want.Namespace = "team-a.logs", ""
			want.Annotations = tc.wantAnnotations
			want.Spec.Namespace = "team-a"
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("AsSidecarSet (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, n); diff != "" {
				t.Errorf("AsSidecarSet changed its receiver (-before +after):\n%s", diff)
			}
			if !IsNamespaced(got) {
				t.Errorf("IsNamespaced(%q) = false", got.Name)
			}
		})
	}
}

// TestAsSidecarSetDropsNamespaceSelector: the SidecarSet a NamespacedSidecarSet takes part as
// selects pods of its namespace only, whatever a (refused) namespaceSelector said.
func TestAsSidecarSetDropsNamespaceSelector(t *testing.T) {
	n := namespaced(nil)
	n.Spec.Namespace = "elsewhere"
	n.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
	ss := n.AsSidecarSet()
	if ss.Spec.Namespace != "team-a" || ss.Spec.NamespaceSelector != nil {
		t.Errorf("spec.namespace %q, namespaceSelector %v; want team-a and none", ss.Spec.Namespace, ss.Spec.NamespaceSelector)
	}
}

// TestAsNamespacedRoundTrip: AsNamespaced gives back the NamespacedSidecarSet AsSidecarSet was
// made of, canary base included.
func TestAsNamespacedRoundTrip(t *testing.T) {
	for _, annotations := range []map[string]string{
		nil,
		{"a": "b"},
		{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: "logs-base"},
	} {
		n := namespaced(annotations)
		got := AsNamespaced(n.AsSidecarSet())
		want := n.DeepCopy()
		want.APIVersion, want.Kind = "apps.kruise.io/v1alpha1", "NamespacedSidecarSet"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("annotations %v: round trip (-want +got):\n%s", annotations, diff)
		}
	}
}

func TestAsNamespacedOfClusterSidecarSet(t *testing.T) {
	ss := &SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "logs"}, Spec: SidecarSetSpec{Namespace: "team-a"}}
	if n := AsNamespaced(ss); n != nil {
		t.Errorf("AsNamespaced of the cluster SidecarSet %q = %+v, want nil", ss.Name, n)
	}
	if IsNamespaced(ss) {
		t.Errorf("IsNamespaced(%q) = true", ss.Name)
	}
}

func TestSplitNamespacedName(t *testing.T) {
	for _, tc := range []struct {
		name             string
		namespace, local string
		ok               bool
	}{
		{name: "logs"},
		{name: "logs-2"},
		{name: ""},
		{name: "team-a.logs", namespace: "team-a", local: "logs", ok: true},
		{name: NamespacedName("kube-system", "x"), namespace: "kube-system", local: "x", ok: true},
	} {
		ns, local, ok := SplitNamespacedName(tc.name)
		// Only ok says anything of a cluster SidecarSet's name.
		if ok != tc.ok || (ok && (ns != tc.namespace || local != tc.local)) {
			t.Errorf("SplitNamespacedName(%q) = %q, %q, %v; want %q, %q, %v", tc.name, ns, local, ok, tc.namespace, tc.local, tc.ok)
		}
		if got := IsNamespaced(&SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}); got != tc.ok {
			t.Errorf("IsNamespaced(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}
