package namespacecap

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNear(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit Limit
		n     int
		want  bool
	}{
		{"no limit", 0, 1000, false},
		{"far", 200, 177, false},
		{"at the margin", 200, 178, true},
		{"at the cap", 200, 200, true},
		{"beyond the cap", 200, 260, true},
		{"small cap is always near", 2, 0, true},
		{"cap of 30 far", 30, 24, false},
		{"cap of 30 near", 30, 25, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.limit.Near(tc.n); got != tc.want {
				t.Errorf("Limit(%d).Near(%d) = %v, want %v", tc.limit, tc.n, got, tc.want)
			}
		})
	}
}

func TestKeeps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  Limit
		before int
		want   bool
	}{
		{"no limit", 0, 5000, true},
		{"empty namespace", 1, 0, true},
		{"one below the cap", 200, 199, true},
		{"at the cap", 200, 200, false},
		{"beyond the cap", 200, 249, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.limit.Keeps(tc.before); got != tc.want {
				t.Errorf("Limit(%d).Keeps(%d) = %v, want %v", tc.limit, tc.before, got, tc.want)
			}
		})
	}
}

func TestRefusalNamesTheFlag(t *testing.T) {
	want := "namespace team-a already holds 2 NamespacedSidecarSets, the most this server allows in one namespace (--max-namespaced-sidecarsets-per-namespace=2)"
	if diff := cmp.Diff(want, Limit(2).Refusal("team-a", 2).Error()); diff != "" {
		t.Errorf("Refusal (-want +got):\n%s", diff)
	}
}

// history is etcd's history of one namespace as the rule sees it: one event per revision.
type history struct {
	limit   Limit
	count   []int        // objects alive after each revision; count[0] is the start
	created map[int]int  // object -> creation revision
	kept    map[int]bool // object -> the rule keeps it
	alive   map[int]bool
	doomed  []int // refused, not yet deleted again
}

// create writes object id at the next revision and settles it with the count just before.
func (h *history) create(id int) {
	before := h.count[len(h.count)-1]
	h.count = append(h.count, before+1)
	h.created[id] = len(h.count) - 1
	h.alive[id] = true
	h.kept[id] = h.limit.Keeps(before)
	if !h.kept[id] {
		h.doomed = append(h.doomed, id)
	}
}

func (h *history) delete(id int) {
	delete(h.alive, id)
	h.count = append(h.count, h.count[len(h.count)-1]-1)
}

func (h *history) keptAlive() []int {
	var out []int
	for id := range h.alive {
		if h.kept[id] {
			out = append(out, id)
		}
	}
	return out
}

// TestRuleUnderInterleavings simulates bursts of creates racing with the deletes of refused
// creates (which come late: the replica that settles them may be slow) and, in some runs, with
// the namespace owner's deletes: at every revision the kept objects alive are at most the cap, and
// without the owner's deletes exactly the first cap creates (by revision) survive.
func TestRuleUnderInterleavings(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		limit := Limit(1 + r.IntN(8))
		ownerDeletes := seed%2 == 1
		h := &history{limit: limit, count: []int{0}, created: map[int]int{}, kept: map[int]bool{}, alive: map[int]bool{}}
		start := r.IntN(int(limit) + 1) // objects before the burst
		for id := 0; id < start; id++ {
			h.create(id)
		}
		next := start
		for step := 0; step < 200; step++ {
			switch k := r.IntN(10); {
			case k < 6:
				h.create(next)
				next++
			case k < 9 && len(h.doomed) > 0:
				i := r.IntN(len(h.doomed))
				h.delete(h.doomed[i])
				h.doomed = append(h.doomed[:i], h.doomed[i+1:]...)
			case ownerDeletes && len(h.keptAlive()) > 0:
				ka := h.keptAlive()
				h.delete(ka[r.IntN(len(ka))])
			}
			if n := len(h.keptAlive()); n > int(limit) {
				t.Fatalf("seed %d: %d objects kept alive, cap %d", seed, n, limit)
			}
		}
		for _, id := range h.doomed {
			h.delete(id)
		}
		if ownerDeletes {
			continue
		}
		var want, got []int
		for id := 0; id < next && id < int(limit); id++ { // ids follow creation revisions
			want = append(want, id)
		}
		for id := 0; id < next; id++ {
			if h.alive[id] {
				got = append(got, id)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("seed %d, cap %d: survivors (-want +got):\n%s", seed, limit, diff)
		}
	}
}
