package sharedspec

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func sidecarSet(name, image, latest string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: image}}},
			Volumes:    []corev1.Volume{{Name: "logs"}},
		},
		Status: v1alpha1.SidecarSetStatus{LatestRevision: latest},
	}
}

func revision(name, sidecarSet, image string) *v1alpha1.SidecarSetRevision {
	return &v1alpha1.SidecarSetRevision{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		SidecarSetName: sidecarSet,
		Spec: v1alpha1.SidecarSetRevisionSpec{
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: image}}},
			Volumes:    []corev1.Volume{{Name: "logs"}},
		},
	}
}

func store(objs ...any) cache.Store {
	s := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			panic(err)
		}
	}
	return s
}

// sameArray reports whether a and b share their backing array.
func sameArray[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// TestShare: an incoming revision takes the recorded spec of its cached SidecarSet when it is the
// same, an incoming SidecarSet the one of its cached latest revision; objects that differ, or
// whose counterpart is not cached, keep their own.
func TestShare(t *testing.T) {
	for _, tc := range []struct {
		name          string
		sets, revs    []any
		in            any
		wantSharedKey string // the cached object the incoming one shares with, "" for none
	}{
		{name: "revision of a cached SidecarSet, same spec",
			sets: []any{sidecarSet("logs", "log:1", "")}, in: revision("logs-a", "logs", "log:1"), wantSharedKey: "logs"},
		{name: "older revision: another spec",
			sets: []any{sidecarSet("logs", "log:2", "")}, in: revision("logs-a", "logs", "log:1")},
		{name: "revision whose SidecarSet is not cached yet",
			in: revision("logs-a", "logs", "log:1")},
		{name: "SidecarSet written again (its status): takes its latest revision's",
			revs: []any{revision("logs-a", "logs", "log:1")}, in: sidecarSet("logs", "log:1", "logs-a"), wantSharedKey: "logs-a"},
		{name: "SidecarSet with a new spec: its latest revision records the old one",
			revs: []any{revision("logs-a", "logs", "log:1")}, in: sidecarSet("logs", "log:2", "logs-a")},
		{name: "SidecarSet without a revision yet",
			revs: []any{revision("logs-a", "logs", "log:1")}, in: sidecarSet("logs", "log:1", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sets, revs := store(tc.sets...), store(tc.revs...)
			s := &Sharer{}
			s.Watch(sets, revs)
			var want v1alpha1.SidecarSetRevisionSpec
			switch in := tc.in.(type) {
			case *v1alpha1.SidecarSetRevision:
				want = *in.Spec.DeepCopy()
			case *v1alpha1.SidecarSet:
				want = recorded(in.DeepCopy())
			}
			out := s.Share(tc.in)
			var got v1alpha1.SidecarSetRevisionSpec
			switch o := out.(type) {
			case *v1alpha1.SidecarSetRevision:
				got = o.Spec
			case *v1alpha1.SidecarSet:
				got = recorded(o)
			}
			if got.Containers[0].Image != want.Containers[0].Image || len(got.Volumes) != len(want.Volumes) {
				t.Fatalf("spec changed: %+v, want %+v", got, want)
			}
			var shared v1alpha1.SidecarSetRevisionSpec
			if obj, ok, _ := sets.GetByKey(tc.wantSharedKey); ok {
				shared = recorded(obj.(*v1alpha1.SidecarSet))
			} else if obj, ok, _ := revs.GetByKey(tc.wantSharedKey); ok {
				shared = obj.(*v1alpha1.SidecarSetRevision).Spec
			}
			isShared := sameArray(got.Containers, shared.Containers) && sameArray(got.Volumes, shared.Volumes)
			if isShared != (tc.wantSharedKey != "") {
				t.Errorf("shares with %q: %v, want %v", tc.wantSharedKey, isShared, tc.wantSharedKey != "")
			}
		})
	}
}

// TestShareLeavesOtherObjects: objects other than SidecarSets and revisions pass as they are.
func TestShareLeavesOtherObjects(t *testing.T) {
	s := &Sharer{}
	s.Watch(store(sidecarSet("logs", "log:1", "")), store())
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "logs"}}
	if got := s.Share(pod); got != pod {
		t.Errorf("Share(pod) = %v", got)
	}
}
