package history

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// history returns revisions 1..n of SidecarSet "s", of images img:1..img:n, oldest first.
func history(t *testing.T, n int) []*v1alpha1.SidecarSetRevision {
	t.Helper()
	out := make([]*v1alpha1.SidecarSetRevision, n)
	for i := range out {
		out[i] = revisionOf(t, fmt.Sprintf("img:%d", i+1), int64(i+1))
	}
	return out
}

// labelled sets the custom version label of revisions from..to (numbers, inclusive) of revs.
func labelled(revs []*v1alpha1.SidecarSetRevision, version string, from, to int) []*v1alpha1.SidecarSetRevision {
	for _, r := range revs[from-1 : to] {
		r.Labels[v1alpha1.SidecarSetCustomVersionLabel] = version
	}
	return revs
}

// namesOf returns the names of revisions from..to (numbers, inclusive) of revs.
func namesOf(revs []*v1alpha1.SidecarSetRevision, from, to int) []string {
	var out []string
	for _, r := range revs[from-1 : to] {
		out = append(out, r.Name)
	}
	return out
}

// foreignNames returns the names of n revisions of another SidecarSet, "other".
func foreignNames(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for i := 1; i <= n; i++ {
		ss := sidecarSet(fmt.Sprintf("img:%d", i), 10)
		ss.Name = "other"
		name, err := revision.Name(ss.Name, revision.Snapshot(ss), 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	return out
}

// numbers returns the revision numbers kept, in order: existing (renumbered by the plan) and
// created, less the pruned.
func numbers(existing []*v1alpha1.SidecarSetRevision, plan Plan) []int64 {
	pruned := sets.New(plan.Prune...)
	var out []int64
	for _, r := range append(existing, plan.Create) {
		if r == nil || pruned.Has(r.Name) {
			continue
		}
		if plan.Renumber != nil && plan.Renumber.Name == r.Name {
			r = plan.Renumber
		}
		out = append(out, r.Revision)
	}
	slices.Sort(out)
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// TestCompareCap: pinned revisions and revisions pods name are kept beyond
// revisionHistoryLimit up to RevisionCap (max(limit, 10)); beyond it the oldest of those pods name
// go, never the latest nor a pinned one; a name that is not one of the SidecarSet's revisions
// protects nothing.
func TestCompareCap(t *testing.T) {
	type setup struct {
		ss       *v1alpha1.SidecarSet
		existing []*v1alpha1.SidecarSetRevision
		inUse    []string
	}
	withPin := func(ss *v1alpha1.SidecarSet, pin v1alpha1.SidecarSetInjectRevision) *v1alpha1.SidecarSet {
		ss.Spec.InjectionStrategy.Revision = &pin
		return ss
	}
	withVersion := func(ss *v1alpha1.SidecarSet, version string) *v1alpha1.SidecarSet {
		ss.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: version}
		return ss
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) setup
		want  []int64 // revision numbers kept, oldest first
	}{
		{"30 changes, limit 1, pinned custom version of every revision", func(t *testing.T) setup {
			revs := labelled(history(t, 30), "v1", 1, 30)
			ss := withPin(withVersion(sidecarSet("img:31", 1), "v1"), v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")})
			return setup{ss, revs, nil}
		}, []int64{31}},
		{"30 changes, limit 1, forged annotations naming every old revision", func(t *testing.T) setup {
			revs := history(t, 30)
			return setup{sidecarSet("img:31", 1), revs, namesOf(revs, 1, 30)}
		}, span(22, 31)},
		{"pinned custom version and forged annotations together", func(t *testing.T) setup {
			revs := labelled(history(t, 30), "v1", 1, 30)
			ss := withPin(withVersion(sidecarSet("img:31", 1), "v1"), v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")})
			return setup{ss, revs, namesOf(revs, 1, 30)}
		}, span(22, 31)},
		{"pods naming another SidecarSet's revisions", func(t *testing.T) setup {
			return setup{sidecarSet("img:31", 1), history(t, 30), foreignNames(t, 30)}
		}, []int64{31}},
		{"pods naming revisions never written", func(t *testing.T) setup {
			return setup{sidecarSet("img:31", 1), history(t, 30), []string{"s-forged", "s-7c9d4b8f6", ""}}
		}, []int64{31}},
		{"older revisions of the pinned custom version are not pinned", func(t *testing.T) setup {
			revs := labelled(labelled(history(t, 8), "v1", 1, 5), "v2", 6, 8)
			ss := withPin(withVersion(sidecarSet("img:8", 1), "v2"), v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")})
			return setup{ss, revs, nil}
		}, []int64{5, 8}},
		{"a pinned custom version outlives forged annotations", func(t *testing.T) setup {
			revs := labelled(labelled(history(t, 30), "v1", 1, 5), "v2", 6, 30)
			ss := withPin(withVersion(sidecarSet("img:31", 1), "v2"), v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v1")})
			return setup{ss, revs, namesOf(revs, 1, 30)}
		}, append([]int64{5}, span(23, 31)...)},
		{"a revision pinned by name outlives forged annotations", func(t *testing.T) setup {
			revs := history(t, 30)
			ss := withPin(sidecarSet("img:31", 1), v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To(revs[0].Name)})
			return setup{ss, revs, namesOf(revs, 1, 30)}
		}, append([]int64{1}, span(23, 31)...)},
		{"revision pinned by name", func(t *testing.T) setup {
			revs := history(t, 30)
			ss := withPin(sidecarSet("img:31", 1), v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To(revs[2].Name)})
			return setup{ss, revs, nil}
		}, []int64{3, 31}},
		{"in-use revisions within the cap kept", func(t *testing.T) setup {
			revs := history(t, 30)
			return setup{sidecarSet("img:30", 1), revs, []string{revs[4].Name, revs[6].Name}}
		}, []int64{5, 7, 30}},
		{"unused revisions go before in-use ones", func(t *testing.T) setup {
			revs := history(t, 20)
			return setup{sidecarSet("img:20", 3), revs, namesOf(revs, 1, 12)}
		}, append(span(4, 12), 20)},
		{"a limit above the cap's constant is the cap", func(t *testing.T) setup {
			revs := history(t, 30)
			return setup{sidecarSet("img:30", 15), revs, namesOf(revs, 1, 20)}
		}, append(span(7, 20), 30)},
		{"no limit set keeps the default 10", func(t *testing.T) setup {
			ss := sidecarSet("img:12", 0)
			ss.Spec.RevisionHistoryLimit = nil
			return setup{ss, history(t, 12), nil}
		}, span(3, 12)},
		{"a rollback to a revision in use keeps it as the latest", func(t *testing.T) setup {
			revs := history(t, 20)
			return setup{sidecarSet("img:1", 1), revs, namesOf(revs, 1, 20)}
		}, span(12, 21)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup(t)
			got, err := Compare(s.ss, s.existing, 0, sets.New(s.inUse...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, numbers(s.existing, got)); diff != "" {
				t.Errorf("revisions kept (-want +got):\n%s", diff)
			}
			if sets.New(got.Prune...).Has(got.Latest) {
				t.Errorf("latest revision %s pruned", got.Latest)
			}
		})
	}
}

// TestRevisionCapOverAHistory simulates whole histories: a SidecarSet changes its image 40
// times (rolling back now and then) while a namespace editor makes its pods name every revision
// stored, another SidecarSet's revisions and names never written. At every step the stored
// revisions are at most RevisionCap, the latest is stored, and so is the revision a custom
// version pin injects.
func TestRevisionCapOverAHistory(t *testing.T) {
	for _, limit := range []*int32{nil, ptr.To[int32](0), ptr.To[int32](1), ptr.To[int32](3), ptr.To[int32](10), ptr.To[int32](15)} {
		for _, pin := range []bool{false, true} {
			name := "limit unset"
			if limit != nil {
				name = fmt.Sprintf("limit %d", *limit)
			}
			t.Run(fmt.Sprintf("%s, pinned %v", name, pin), func(t *testing.T) {
				simulateHistory(t, limit, pin)
			})
		}
	}
}

func simulateHistory(t *testing.T, limit *int32, pin bool) {
	stored := map[string]*v1alpha1.SidecarSetRevision{}
	foreign := foreignNames(t, 5)
	for step := 1; step <= 40; step++ {
		image := step
		if step%7 == 0 {
			image = step - 5 // a rollback
		}
		ss := sidecarSet(fmt.Sprintf("img:%d", image), 0)
		ss.Spec.RevisionHistoryLimit = limit
		ss.Labels = map[string]string{v1alpha1.SidecarSetCustomVersionLabel: fmt.Sprintf("v%d", step/10)}
		if pin {
			ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("v0")}
		}
		inUse := sets.New(append(foreign, "s-never-written")...)
		existing := make([]*v1alpha1.SidecarSetRevision, 0, len(stored))
		for name, r := range stored {
			inUse.Insert(name)
			existing = append(existing, r)
		}
		plan, err := Compare(ss, existing, 0, inUse)
		if err != nil {
			t.Fatal(err)
		}
		applyPlan(stored, plan)
		if len(stored) > RevisionCap(ss) {
			t.Fatalf("step %d: %d revisions stored, cap %d", step, len(stored), RevisionCap(ss))
		}
		if stored[plan.Latest] == nil {
			t.Fatalf("step %d: latest revision %s not stored", step, plan.Latest)
		}
		if pin && !hasVersion(stored, "v0") {
			t.Fatalf("step %d: no revision of the pinned custom version v0 stored", step)
		}
	}
}

// applyPlan does to stored what the history writer does to storage.
func applyPlan(stored map[string]*v1alpha1.SidecarSetRevision, plan Plan) {
	for _, r := range []*v1alpha1.SidecarSetRevision{plan.Create, plan.Renumber, plan.Relabel} {
		if r != nil {
			stored[r.Name] = r
		}
	}
	for _, name := range plan.Prune {
		delete(stored, name)
	}
}

func hasVersion(stored map[string]*v1alpha1.SidecarSetRevision, version string) bool {
	for _, r := range stored {
		if r.Labels[v1alpha1.SidecarSetCustomVersionLabel] == version {
			return true
		}
	}
	return false
}

// FuzzCompareCap: whatever the history, limit, pin and revisions pods name, the plan keeps
// at most RevisionCap revisions, never prunes the latest nor a pinned one, and prunes only
// revisions it was given.
func FuzzCompareCap(f *testing.F) {
	f.Add(uint8(30), int8(1), uint64(1<<30-1), uint8(3), false)
	f.Add(uint8(12), int8(-1), uint64(0), uint8(0), true)
	f.Add(uint8(40), int8(15), uint64(0xf0f0f0f0f0), uint8(39), false)
	f.Fuzz(func(t *testing.T, n uint8, limit int8, inUseMask uint64, pinned uint8, changed bool) {
		revs := history(t, int(n%48)+1)
		image := len(revs)
		if changed {
			image++
		}
		ss := sidecarSet(fmt.Sprintf("img:%d", image), 0)
		ss.Spec.RevisionHistoryLimit = nil
		if limit >= 0 {
			ss.Spec.RevisionHistoryLimit = ptr.To(int32(limit))
		}
		pin := revs[int(pinned)%len(revs)].Name
		ss.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{RevisionName: ptr.To(pin)}
		inUse := sets.New("s-never-written")
		for i, r := range revs {
			if i < 64 && inUseMask&(1<<i) != 0 {
				inUse.Insert(r.Name)
			}
		}
		plan, err := Compare(ss, revs, 0, inUse)
		if err != nil {
			t.Fatal(err)
		}
		kept := numbers(revs, plan)
		pruned := sets.New(plan.Prune...)
		for _, name := range plan.OverCap {
			if !pruned.Has(name) || (!inUse.Has(name) && name != pin) {
				t.Errorf("over cap %s: pruned %v, in use %v", name, pruned.Has(name), inUse.Has(name))
			}
		}
		if len(kept) > RevisionCap(ss) {
			t.Errorf("%d revisions kept, cap %d", len(kept), RevisionCap(ss))
		}
		given := sets.New(namesOf(revs, 1, len(revs))...)
		for _, name := range plan.Prune {
			if name == plan.Latest || name == pin || !given.Has(name) {
				t.Errorf("pruned %s (latest %s, pinned %s)", name, plan.Latest, pin)
			}
		}
	})
}

// TestCompareOverCap: the plan lists, apart, the pruned revisions that pods named or a pin
// held, those the cap took, for the writer's warning.
func TestCompareOverCap(t *testing.T) {
	revs := history(t, 30)
	for _, tc := range []struct {
		name  string
		limit int32
		inUse []string
		want  []string
	}{
		{"nothing in use", 1, nil, nil},
		{"in use within the cap", 1, namesOf(revs, 25, 30), nil},
		{"in use past the cap", 1, namesOf(revs, 1, 30), namesOf(revs, 1, 21)},
		{"unused ones pruned first, not listed", 3, namesOf(revs, 15, 30), namesOf(revs, 15, 21)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compare(sidecarSet("img:31", tc.limit), revs, 0, sets.New(tc.inUse...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.OverCap); diff != "" {
				t.Errorf("over cap (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHistoryEvents: a revision created or rolled back to is a Normal event; revisions the cap
// took from pods or a pin are a Warning naming them and the cap.
func TestHistoryEvents(t *testing.T) {
	ss := sidecarSet("img:1", 1)
	rev := revisionOf(t, "img:1", 3)
	for _, tc := range []struct {
		name    string
		written historyWritten
		want    []string // reason: message
	}{
		{"nothing written", historyWritten{}, nil},
		{"created", historyWritten{changed: rev, created: true},
			[]string{"RevisionCreated: recorded revision " + rev.Name + " (number 3) of the new spec"}},
		{"rolled back", historyWritten{changed: rev},
			[]string{"RolledBack: the spec is that of revision " + rev.Name + " again, now number 3"}},
		{"over the cap", historyWritten{changed: rev, created: true, overCap: []string{"s-a", "s-b"}}, []string{
			"RevisionCreated: recorded revision " + rev.Name + " (number 3) of the new spec",
			"RevisionCapReached: deleted revisions s-a, s-b, pinned or named by pods: at most 10 revisions are kept (max(revisionHistoryLimit, 10))"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range historyEvents(ss, tc.written) {
				got = append(got, e.Reason+": "+e.Message)
				if (e.Reason == "RevisionCapReached") != (e.Type == corev1.EventTypeWarning) {
					t.Errorf("event %s of type %s", e.Reason, e.Type)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
