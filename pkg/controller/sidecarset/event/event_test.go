package event

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func namespaced() *v1alpha1.SidecarSet {
	n := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "logs", UID: "n-uid", ResourceVersion: "5"}}
	return n.AsSidecarSet()
}

// TestObject: the events of a NamespacedSidecarSet are about it, in its namespace; those of a
// SidecarSet about the SidecarSet.
func TestObject(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	clusterSet := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", UID: "m-uid"}, Spec: v1alpha1.SidecarSetSpec{Namespace: "team-a"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "p"}}
	for _, tc := range []struct {
		name string
		in   runtime.Object
		want corev1.ObjectReference
	}{
		{"NamespacedSidecarSet", namespaced(), corev1.ObjectReference{Kind: "NamespacedSidecarSet",
			APIVersion: "apps.kruise.io/v1alpha1", Namespace: "team-a", Name: "logs", UID: "n-uid", ResourceVersion: "5"}},
		{"SidecarSet", clusterSet, corev1.ObjectReference{Kind: "SidecarSet", APIVersion: "apps.kruise.io/v1alpha1", Name: "mesh", UID: "m-uid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := object(tc.in)
			if _, isNamespaced := got.(*v1alpha1.NamespacedSidecarSet); isNamespaced != (tc.want.Kind == "NamespacedSidecarSet") {
				t.Fatalf("object = %T", got)
			}
			ref, err := reference.GetReference(scheme, got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, *ref); diff != "" {
				t.Errorf("reference (-want +got):\n%s", diff)
			}
		})
	}
	if got := object(pod); got != pod {
		t.Errorf("object(pod) = %#v", got)
	}
}

// TestRecordNamespaced: Record reports a NamespacedSidecarSet's events on the
// NamespacedSidecarSet.
func TestRecordNamespaced(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	Record(rec, []Pending{Normal(namespaced(), "Paused", "paused")})
	want := "Normal Paused paused involvedObject{kind=NamespacedSidecarSet,apiVersion=apps.kruise.io/v1alpha1}"
	if got := <-rec.Events; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
}
