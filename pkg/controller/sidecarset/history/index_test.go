package history

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestRevisionIndex: revisions are found by their SidecarSet's name label, a revision without it
// by none, and indexing an informer twice (two controllers sharing it) is harmless.
func TestRevisionIndex(t *testing.T) {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1alpha1.SidecarSetRevision{}, 0, cache.Indexers{})
	idx, err := IndexRevisions(inf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := IndexRevisions(inf); err != nil {
		t.Fatalf("indexing again: %v", err)
	}
	rev := func(name, owner string) *v1alpha1.SidecarSetRevision {
		r := &v1alpha1.SidecarSetRevision{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if owner != "" {
			r.Labels = map[string]string{v1alpha1.SidecarSetNameLabel: owner}
		}
		return r
	}
	for _, r := range []*v1alpha1.SidecarSetRevision{rev("a-1", "a"), rev("a-2", "a"), rev("b-1", "b"), rev("loose", "")} {
		if err := idx.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	w := &Writer{index: idx}
	for _, tc := range []struct {
		sidecarSet string
		want       int
	}{{"a", 2}, {"b", 1}, {"c", 0}, {"", 0}} {
		if got := w.named(tc.sidecarSet); len(got) != tc.want {
			t.Errorf("revisions of %q: %d, want %d", tc.sidecarSet, len(got), tc.want)
		}
	}
}
