package history

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

func sidecarSet(image string, limit int32) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s", UID: "u"}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "c", Image: image}}}
	ss.Spec.RevisionHistoryLimit = ptr.To(limit)
	return ss
}

func revisionOf(t *testing.T, image string, n int64) *v1alpha1.SidecarSetRevision {
	ss := sidecarSet(image, 10)
	name, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
	if err != nil {
		t.Fatal(err)
	}
	return NewRevision(ss, name, n)
}

func TestCompare(t *testing.T) {
	v1, v2, v3 := revisionOf(t, "img:1", 1), revisionOf(t, "img:2", 2), revisionOf(t, "img:3", 3)
	dup1 := revisionOf(t, "img:2", 1) // an imported revision recording v2's spec, numbered lower
	dup1.Name = "imported"
	tests := []struct {
		name         string
		ss           *v1alpha1.SidecarSet
		existing     []*v1alpha1.SidecarSetRevision
		wantLatest   string
		wantCreate   int64 // revision number of the created revision, 0 for none
		wantRenumber int64
		wantPrune    []string
	}{
		{"first revision", sidecarSet("img:1", 10), nil, v1.Name, 1, 0, nil},
		{"unchanged spec", sidecarSet("img:2", 10), []*v1alpha1.SidecarSetRevision{v2, v1}, v2.Name, 0, 0, nil},
		{"new spec", sidecarSet("img:3", 10), []*v1alpha1.SidecarSetRevision{v1, v2}, v3.Name, 3, 0, nil},
		{"rollback renumbers", sidecarSet("img:1", 10), []*v1alpha1.SidecarSetRevision{v1, v2}, v1.Name, 0, 3, nil},
		{"prune oldest beyond the limit", sidecarSet("img:3", 2), []*v1alpha1.SidecarSetRevision{v1, v2}, v3.Name, 3, 0, []string{v1.Name}},
		{"limit 0 still keeps the latest", sidecarSet("img:2", 0), []*v1alpha1.SidecarSetRevision{v1, v2}, v2.Name, 0, 0, []string{v1.Name}},
		// An older duplicate of the newest revision stays where it is: renumbering it would make
		// it the newest, and the next round would renumber the other one, and so on.
		{"older duplicate of the newest not renumbered", sidecarSet("img:2", 10), []*v1alpha1.SidecarSetRevision{dup1, v1, v2}, v2.Name, 0, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compare(tc.ss, tc.existing, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Latest != tc.wantLatest {
				t.Errorf("latest = %s, want %s", got.Latest, tc.wantLatest)
			}
			if n := numberOf(got.Create); n != tc.wantCreate {
				t.Errorf("created revision %d, want %d", n, tc.wantCreate)
			}
			if n := numberOf(got.Renumber); n != tc.wantRenumber {
				t.Errorf("renumbered to %d, want %d", n, tc.wantRenumber)
			}
			if diff := cmp.Diff(tc.wantPrune, got.Prune); diff != "" {
				t.Errorf("prune (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPinnedRevisionIsNotPruned(t *testing.T) {
	v1, v2 := revisionOf(t, "img:1", 1), revisionOf(t, "img:2", 2)
	ss := sidecarSet("img:3", 1)
	ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To(v1.Name)}
	got, err := Compare(ss, []*v1alpha1.SidecarSetRevision{v1, v2}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{v2.Name}, got.Prune); diff != "" {
		t.Errorf("prune (-want +got):\n%s", diff)
	}
}

func numberOf(r *v1alpha1.SidecarSetRevision) int64 {
	if r == nil {
		return 0
	}
	return r.Revision
}

func TestRevisionRunByPodsIsNotPruned(t *testing.T) {
	v1, v2, v3 := revisionOf(t, "img:1", 1), revisionOf(t, "img:2", 2), revisionOf(t, "img:3", 3)
	ss := sidecarSet("img:4", 1)
	ss.Spec.Selector = &metav1.LabelSelector{}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{
		sidecar.InjectedListAnnotation: ss.Name}}}
	pod.Spec.Containers = []corev1.Container{{Name: "c", Image: "img:2"}}
	if err := sidecar.SetHashEntry(pod.Annotations, sidecar.HashAnnotation,
		sidecar.NewHashEntry(ss.Name, "h2", v2.Name, []string{"c"}, time.Now())); err != nil {
		t.Fatal(err)
	}
	inUse := RevisionsInUse(ss, []*rollout.Pod{rollout.NewPod(pod)})
	if !inUse.Has(v2.Name) || inUse.Len() != 1 {
		t.Fatalf("in use = %v, want %s", sets.List(inUse), v2.Name)
	}
	got, err := Compare(ss, []*v1alpha1.SidecarSetRevision{v1, v2, v3}, 0, inUse)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{v1.Name, v3.Name}, got.Prune); diff != "" {
		t.Errorf("prune (-want +got):\n%s", diff)
	}
}

func TestSplitOwned(t *testing.T) {
	ss := &v1alpha1.SidecarSet{}
	ss.Name, ss.UID = "ss", "uid-now"
	rev := func(name string, owner types.UID) *v1alpha1.SidecarSetRevision {
		r := &v1alpha1.SidecarSetRevision{}
		r.Name = name
		if owner != "" {
			controller := true
			r.OwnerReferences = []metav1.OwnerReference{{Kind: "SidecarSet", Name: "ss", UID: owner, Controller: &controller}}
		}
		return r
	}
	owned, stale := splitOwned([]*v1alpha1.SidecarSetRevision{rev("mine", "uid-now"), rev("earlier", "uid-before"), rev("unowned", "")}, ss)
	names := func(revs []*v1alpha1.SidecarSetRevision) string {
		var out []string
		for _, r := range revs {
			out = append(out, r.Name)
		}
		return strings.Join(out, ",")
	}
	if names(owned) != "mine,unowned" || names(stale) != "earlier" {
		t.Errorf("owned %s, stale %s; want mine,unowned and earlier", names(owned), names(stale))
	}
}

// TestCompareAdoptsImportedRevisions: revisions without a controller (imported from
// OpenKruise, under OpenKruise's names) are the history of the SidecarSet they are labelled with:
// the one equal to the spec is its latest (no duplicate recorded), an older one is renumbered on
// rollback, and each gets the SidecarSet as its controller.
func TestCompareAdoptsImportedRevisions(t *testing.T) {
	imported := func(image, name string, n int64) *v1alpha1.SidecarSetRevision {
		r := revisionOf(t, image, n)
		r.Name, r.OwnerReferences = name, nil
		return r
	}
	v1, v2 := imported("img:1", "s-okv1", 1), imported("img:2", "s-okv2", 2)
	v3 := revisionOf(t, "img:3", 3)
	tests := []struct {
		name         string
		image        string
		wantLatest   string
		wantCreate   int64
		wantRenumber int64
		wantAdopt    []string
	}{
		{"the spec of the newest: reused", "img:2", "s-okv2", 0, 0, []string{"s-okv1", "s-okv2"}},
		{"the spec of an older one: renumbered", "img:1", "s-okv1", 0, 3, []string{"s-okv2"}},
		{"a new spec: recorded", "img:3", v3.Name, 3, 0, []string{"s-okv1", "s-okv2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss := sidecarSet(tc.image, 10)
			got, err := Compare(ss, []*v1alpha1.SidecarSetRevision{v2, v1}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Latest != tc.wantLatest || numberOf(got.Create) != tc.wantCreate || numberOf(got.Renumber) != tc.wantRenumber {
				t.Errorf("latest %s, created %d, renumbered %d; want %s, %d, %d", got.Latest, numberOf(got.Create),
					numberOf(got.Renumber), tc.wantLatest, tc.wantCreate, tc.wantRenumber)
			}
			var adopted []string
			for _, r := range append(got.Adopt, got.Renumber) {
				if r == nil {
					continue
				}
				if owner := metav1.GetControllerOf(r); owner == nil || owner.UID != ss.UID || owner.Kind != "SidecarSet" {
					t.Errorf("revision %s: controller %+v, want the SidecarSet", r.Name, owner)
				}
				if r != got.Renumber {
					adopted = append(adopted, r.Name)
				}
			}
			if diff := cmp.Diff(tc.wantAdopt, adopted); diff != "" {
				t.Errorf("adopted (-want +got):\n%s", diff)
			}
			if v1.OwnerReferences != nil || v2.OwnerReferences != nil {
				t.Error("Compare changed its input")
			}
		})
	}
}

// TestCustomVersionRelabel: a new custom version on an unchanged spec relabels the revision of the
// spec (the one written, renumbered on a rollback), as OpenKruise does; the same or no custom
// version writes nothing.
func TestCustomVersionRelabel(t *testing.T) {
	v1, v2 := revisionOf(t, "img:1", 1), revisionOf(t, "img:2", 2)
	v2.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "blue"}
	withVersion := func(image, version string) *v1alpha1.SidecarSet {
		ss := sidecarSet(image, 10)
		if version != "" {
			ss.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: version}
		}
		return ss
	}
	for _, tc := range []struct {
		name                  string
		ss                    *v1alpha1.SidecarSet
		relabel, renumberedTo string // the revision written with the label, and its label
	}{
		{"a new custom version", withVersion("img:2", "green"), v2.Name, ""},
		{"the same custom version", withVersion("img:2", "blue"), "", ""},
		{"no custom version", withVersion("img:2", ""), "", ""},
		{"a rollback with a custom version", withVersion("img:1", "green"), "", "green"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compare(tc.ss, []*v1alpha1.SidecarSetRevision{v1, v2}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			var relabel string
			if got.Relabel != nil {
				relabel = got.Relabel.Name
				if l := got.Relabel.Labels[v1alpha1.SidecarSetCustomVersionLabel]; l != "green" || got.Relabel.Revision != 2 {
					t.Errorf("relabelled %s to %q, number %d", relabel, l, got.Relabel.Revision)
				}
			}
			if relabel != tc.relabel {
				t.Errorf("relabel %q, want %q", relabel, tc.relabel)
			}
			var renumbered string
			if got.Renumber != nil {
				renumbered = got.Renumber.Labels[v1alpha1.SidecarSetCustomVersionLabel]
			}
			if renumbered != tc.renumberedTo {
				t.Errorf("renumbered revision labelled %q, want %q", renumbered, tc.renumberedTo)
			}
			if v2.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "blue" {
				t.Fatal("the stored revision was modified")
			}
		})
	}
}
