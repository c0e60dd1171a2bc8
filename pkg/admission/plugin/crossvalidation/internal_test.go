package crossvalidation

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func storedSet(name, uid, rv string) *v1alpha1.SidecarSet {
	return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), ResourceVersion: rv}}
}

// TestInternalCache: a SidecarSet is converted again only when its resourceVersion or UID
// changed.
func TestInternalCache(t *testing.T) {
	var c internalCache
	first, err := c.get(storedSet("a", "1", "10"))
	if err != nil || first.Name != "a" {
		t.Fatalf("first: %v %v", first, err)
	}
	for _, step := range []struct {
		name   string
		w      *v1alpha1.SidecarSet
		reused bool // the object converted for a at 10 is returned
	}{
		{"unchanged: reused", storedSet("a", "1", "10"), true},
		{"a changed: converted again", storedSet("a", "1", "11"), false},
		{"a re-created under its name: converted", storedSet("a", "3", "10"), false},
		{"no UID: converted, not kept", storedSet("a", "", "10"), false},
	} {
		got, err := c.get(step.w)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if (got == first) != step.reused {
			t.Errorf("%s: reused %v, want %v", step.name, got == first, step.reused)
		}
		if got.ResourceVersion != step.w.ResourceVersion || got.UID != step.w.UID {
			t.Errorf("%s: converted %s/%s, want %s/%s", step.name, got.UID, got.ResourceVersion, step.w.UID, step.w.ResourceVersion)
		}
	}
	if len(c.byID) != 2 {
		t.Errorf("%d cached, want 2 (UIDs 1 and 3)", len(c.byID))
	}
}

// TestInternalCacheSweep: once the cache has doubled since its last sweep, the SidecarSets no
// longer stored (deleted, or re-created under a new UID) are forgotten, and only then.
func TestInternalCacheSweep(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	var c internalCache
	add := func(name, uid string) {
		w := storedSet(name, uid, "1")
		if err := store.Add(w); err != nil {
			t.Fatal(err)
		}
		if _, err := c.get(w); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		add(fmt.Sprintf("kept-%d", i), fmt.Sprintf("kept-%d", i))
	}
	for i := range 40 {
		add(fmt.Sprintf("gone-%d", i), fmt.Sprintf("gone-%d", i))
		if err := store.Delete(storedSet(fmt.Sprintf("gone-%d", i), "", "")); err != nil {
			t.Fatal(err)
		}
	}
	add("kept-0", "new-uid") // re-created: the entry of UID kept-0 is stale
	c.sweep(store)
	if len(c.byID) != 40 {
		t.Fatalf("%d cached after the sweep, want the 40 stored", len(c.byID))
	}
	if _, ok := c.byID["kept-0"]; ok {
		t.Errorf("the entry of a re-created SidecarSet's old UID was kept")
	}
	add("late", "late")
	if err := store.Delete(storedSet("late", "", "")); err != nil {
		t.Fatal(err)
	}
	c.sweep(store)
	if len(c.byID) != 41 {
		t.Errorf("%d cached, want 41: a sweep before the cache doubled again", len(c.byID))
	}
}
