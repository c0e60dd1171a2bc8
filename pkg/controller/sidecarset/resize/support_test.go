package resize

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/history"
)

// TestSupportOptions: a revision is resizable to the spec when its sidecars differ in images and
// resources only (found through the informer's index, whoever indexed it first).
func TestSupportOptions(t *testing.T) {
	sidecar := func(image, cpu string, env ...corev1.EnvVar) v1alpha1.SidecarContainer {
		return v1alpha1.SidecarContainer{Container: corev1.Container{Name: "log", Image: image, Env: env,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	}
	rev := func(name, owner string, c v1alpha1.SidecarContainer) *v1alpha1.SidecarSetRevision {
		return &v1alpha1.SidecarSetRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{v1alpha1.SidecarSetNameLabel: owner}},
			Spec:       v1alpha1.SidecarSetRevisionSpec{Containers: []v1alpha1.SidecarContainer{c}},
		}
	}
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1alpha1.SidecarSetRevision{}, 0, cache.Indexers{})
	if _, err := history.IndexRevisions(inf); err != nil { // the controller indexed it first
		t.Fatal(err)
	}
	r, err := NewSupport(nil, inf)
	if err != nil {
		t.Fatal(err)
	}
	r.support = func() (string, error) { return "", nil }
	for _, rv := range []*v1alpha1.SidecarSetRevision{
		rev("log-1", "log", sidecar("log:v1", "100m")),                                           // image and cpu differ
		rev("log-2", "log", sidecar("log:v2", "100m", corev1.EnvVar{Name: "LEVEL", Value: "1"})), // env differs
		rev("log-3", "log", sidecar("log:v2", "200m")),                                           // the spec itself
		rev("other-1", "other", sidecar("log:v1", "100m")),                                       // another SidecarSet's
	} {
		if err := inf.GetIndexer().Add(rv); err != nil {
			t.Fatal(err)
		}
	}
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log", Annotations: map[string]string{v1alpha1.SidecarSetHashAnnotation: "h2"}},
		Spec: v1alpha1.SidecarSetSpec{Containers: []v1alpha1.SidecarContainer{sidecar("log:v2", "200m")}}}

	opts := r.Options(ss)
	for _, tc := range []struct {
		revision string
		want     bool
	}{{"log-1", true}, {"log-2", false}, {"log-3", true}, {"other-1", false}} {
		if got := opts.ResizableRevisions[tc.revision]; got != tc.want {
			t.Errorf("revision %s resizable: %v, want %v", tc.revision, got, tc.want)
		}
	}
	if opts.ResizeUnsupported != "" {
		t.Errorf("unsupported: %q, want none", opts.ResizeUnsupported)
	}
}
