package crossvalidation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestInternalCache: a SidecarSet is converted again only when its resourceVersion changed, and
// one no longer listed is forgotten.
func TestInternalCache(t *testing.T) {
	stored := func(name, uid, rv string) *v1alpha1.SidecarSet {
		return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv}}
	}
	var c internalCache
	first, err := c.convert([]*v1alpha1.SidecarSet{stored("a", "1", "10"), stored("b", "2", "20")})
	if err != nil || len(first) != 2 || first[0].Name != "a" || first[1].Name != "b" {
		t.Fatalf("first: %v %v", first, err)
	}
	for _, step := range []struct {
		name     string
		list     []*v1alpha1.SidecarSet
		sameAsA  bool // the first result is the object converted for a at 10
		cacheLen int
	}{
		{"unchanged: reused", []*v1alpha1.SidecarSet{stored("a", "1", "10"), stored("b", "2", "20")}, true, 2},
		{"a changed: converted again", []*v1alpha1.SidecarSet{stored("a", "1", "11"), stored("b", "2", "20")}, false, 2},
		{"b deleted: forgotten", []*v1alpha1.SidecarSet{stored("a", "1", "11")}, false, 1},
		{"a re-created under its name: converted", []*v1alpha1.SidecarSet{stored("a", "3", "10")}, false, 1},
	} {
		got, err := c.convert(step.list)
		if err != nil || len(got) != len(step.list) {
			t.Fatalf("%s: %v %v", step.name, got, err)
		}
		if (got[0] == first[0]) != step.sameAsA {
			t.Errorf("%s: reused %v, want %v", step.name, got[0] == first[0], step.sameAsA)
		}
		if got[0].ResourceVersion != step.list[0].ResourceVersion {
			t.Errorf("%s: resourceVersion %s, want %s", step.name, got[0].ResourceVersion, step.list[0].ResourceVersion)
		}
		if len(c.byID) != step.cacheLen {
			t.Errorf("%s: %d cached, want %d", step.name, len(c.byID), step.cacheLen)
		}
	}
}
