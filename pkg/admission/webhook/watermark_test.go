package webhook

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
)

func TestWatermark(t *testing.T) {
	for _, tc := range []struct {
		name     string
		advances []string
		wait     string
		reached  bool
	}{
		{name: "nothing taken in", wait: "5"},
		{name: "exactly the write", advances: []string{"5"}, wait: "5", reached: true},
		{name: "past the write", advances: []string{"9"}, wait: "5", reached: true},
		{name: "an older event after a newer one keeps the newer", advances: []string{"9", "3"}, wait: "7", reached: true},
		{name: "short of the write", advances: []string{"4"}, wait: "5"},
		// resourceVersions are compared as numbers, not as strings.
		{name: "numeric order", advances: []string{"10"}, wait: "9", reached: true},
		{name: "numeric order, short", advances: []string{"9"}, wait: "10"},
		{name: "a version that is not a number is not waited for", advances: nil, wait: "x", reached: true},
		{name: "an event that is not a number is ignored", advances: []string{"x"}, wait: "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWatermark()
			for _, rv := range tc.advances {
				w.Advance(rv)
			}
			if got := w.Reached(tc.wait); got != tc.reached {
				t.Errorf("Reached(%s) = %v, want %v", tc.wait, got, tc.reached)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := w.Wait(ctx, tc.wait); (err == nil) != tc.reached {
				t.Errorf("Wait(%s) = %v, want reached=%v", tc.wait, err, tc.reached)
			}
		})
	}
}

// TestWatermarkWakesWaiters: a write waiting for its event returns when the event is taken in,
// not at its deadline.
func TestWatermarkWakesWaiters(t *testing.T) {
	w := NewWatermark()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done <- w.Wait(ctx, "12")
	}()
	w.Advance("11")
	select {
	case err := <-done:
		t.Fatalf("Wait returned before its event was taken in: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	w.Advance("12")
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once its event was taken in")
	}
}

// TestMarksKeepStreamsApart: the informer merges the SidecarSet and NamespacedSidecarSet
// watches, so a SidecarSet event at a newer version can be taken in before a NamespacedSidecarSet
// event at an older one. A NamespacedSidecarSet write then waits for its own event, not for any
// newer one; and the reverse.
func TestMarksKeepStreamsApart(t *testing.T) {
	namespaced := (&v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "log", ResourceVersion: "10"}}).AsSidecarSet()
	cluster := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", ResourceVersion: "12"}}
	for _, tc := range []struct {
		name                        string
		taken                       []*v1alpha1.SidecarSet
		clusterAt, namespacedAt     string
		wantCluster, wantNamespaced bool
	}{
		{name: "a newer SidecarSet event first", taken: []*v1alpha1.SidecarSet{cluster},
			clusterAt: "12", namespacedAt: "10", wantCluster: true},
		{name: "a newer NamespacedSidecarSet event first", taken: []*v1alpha1.SidecarSet{namespacedAt("14")},
			clusterAt: "12", namespacedAt: "10", wantNamespaced: true},
		{name: "both taken in", taken: []*v1alpha1.SidecarSet{cluster, namespaced},
			clusterAt: "12", namespacedAt: "10", wantCluster: true, wantNamespaced: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marks := NewMarks()
			h := Indexer{Index: injection.NewIndex(), Seen: marks}.Handler()
			for _, ss := range tc.taken {
				h.OnAdd(ss, false)
			}
			if got := marks.Cluster.Reached(tc.clusterAt); got != tc.wantCluster {
				t.Errorf("SidecarSet write at %s taken in: %v, want %v", tc.clusterAt, got, tc.wantCluster)
			}
			if got := marks.Namespaced.Reached(tc.namespacedAt); got != tc.wantNamespaced {
				t.Errorf("NamespacedSidecarSet write at %s taken in: %v, want %v", tc.namespacedAt, got, tc.wantNamespaced)
			}
		})
	}
}

// namespacedAt is a NamespacedSidecarSet, as the informer hands it, at resourceVersion rv.
func namespacedAt(rv string) *v1alpha1.SidecarSet {
	n := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "other", ResourceVersion: rv}}
	return n.AsSidecarSet()
}
