package predownload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

const img = "reg.example/mesh:v2"

func need(uid, node string, images ...string) Need {
	if len(images) == 0 {
		images = []string{img}
	}
	return Need{UID: types.UID(uid), Node: node, Images: images}
}

func pull(node string, phase Phase, age time.Duration) Pull {
	return Pull{Key: Key{Node: node, Image: img}, Name: "pull-" + node, Created: t0.Add(-age), Phase: phase}
}

func key(node string) Key { return Key{Node: node, Image: img} }

func TestPlan(t *testing.T) {
	cfg := Config{Parallelism: 2, Timeout: time.Minute}
	tests := []struct {
		name string
		in   Input
		want Result
	}{{
		name: "pulls start in the rollout's order, at most the parallelism, one per node",
		in:   Input{Config: cfg, Needs: []Need{need("a", "n3"), need("b", "n1"), need("c", "n3"), need("d", "n2"), need("e", "n4")}},
		want: Result{
			States: map[types.UID]State{"a": Downloading, "b": Downloading, "c": Downloading, "d": Downloading, "e": Downloading},
			Create: []Key{key("n3"), key("n1")}, Running: 2,
		},
	}, {
		name: "running pulls take places of the parallelism",
		in:   Input{Config: cfg, Needs: []Need{need("a", "n1"), need("b", "n2"), need("c", "n3")}, Pulls: []Pull{pull("n2", Pulling, time.Second)}},
		want: Result{
			States: map[types.UID]State{"a": Downloading, "b": Downloading, "c": Downloading},
			Create: []Key{key("n1")}, Running: 2,
		},
	}, {
		name: "a node that lists the image needs no pull: its pods are PreDownloaded and the next node pulls",
		in: Input{Config: cfg, Needs: []Need{need("a", "n1"), need("b", "n2"), need("c", "n3")},
			OnNode: func(node, image string) bool { return node == "n1" && image == img }},
		want: Result{
			States: map[types.UID]State{"a": Downloaded, "b": Downloading, "c": Downloading},
			Create: []Key{key("n2"), key("n3")}, Running: 2,
		},
	}, {
		name: "a pull that ended is deleted, remembered, and its node's pods are PreDownloaded",
		in:   Input{Config: cfg, Needs: []Need{need("a", "n1"), need("b", "n2")}, Pulls: []Pull{pull("n1", Pulled, time.Second)}},
		want: Result{
			States: map[types.UID]State{"a": Downloaded, "b": Downloading},
			Create: []Key{key("n2")}, Delete: []Pull{pull("n1", Pulled, time.Second)},
			Ended: []Outcome{{Key: key("n1"), Result: ResultPulled}}, Running: 1,
		},
	}, {
		name: "a pull running for the timeout ends: the pod waits no more and the node is not tried again",
		in:   Input{Config: cfg, Now: t0, Needs: []Need{need("a", "n1")}, Pulls: []Pull{pull("n1", Pulling, time.Minute)}},
		want: Result{
			States: map[types.UID]State{}, Delete: []Pull{pull("n1", Pulling, time.Minute)},
			Ended: []Outcome{{Key: key("n1"), Result: ResultTimedOut, Message: "the pull ran for 1m0s"}},
		},
	}, {
		name: "a pull just within the timeout still holds",
		in:   Input{Config: cfg, Now: t0, Needs: []Need{need("a", "n1")}, Pulls: []Pull{pull("n1", Pulling, time.Minute-time.Millisecond)}},
		want: Result{States: map[types.UID]State{"a": Downloading}, Running: 1},
	}, {
		name: "a failed pull is reported and holds nothing",
		in: Input{Config: cfg, Needs: []Need{need("a", "n1")},
			Pulls: []Pull{{Key: key("n1"), Name: "p", Phase: Failed, Message: "ErrImagePull: not found"}}},
		want: Result{
			States: map[types.UID]State{}, Delete: []Pull{{Key: key("n1"), Name: "p", Phase: Failed, Message: "ErrImagePull: not found"}},
			Ended: []Outcome{{Key: key("n1"), Result: ResultFailed, Message: "ErrImagePull: not found"}},
		},
	}, {
		name: "remembered outcomes: pulled is PreDownloaded, failed or timed out is neither and not pulled again",
		in: Input{Config: cfg, Needs: []Need{need("a", "n1"), need("b", "n2"), need("c", "n3")},
			Ended: map[Key]Outcome{key("n1"): {Key: key("n1"), Result: ResultPulled}, key("n2"): {Key: key("n2"), Result: ResultFailed},
				key("n3"): {Key: key("n3"), Result: ResultTimedOut}}},
		want: Result{States: map[types.UID]State{"a": Downloaded}},
	}, {
		name: "below min-updated-ready no pull starts and nothing is held",
		in: Input{Config: Config{Parallelism: 2, Timeout: time.Minute, MinUpdatedReady: intstr.FromString("50%")},
			Needs: []Need{need("a", "n1")}, UpdatedReady: 1, Matched: 3},
		want: Result{States: map[types.UID]State{}},
	}, {
		name: "at min-updated-ready pulls start",
		in: Input{Config: Config{Parallelism: 2, Timeout: time.Minute, MinUpdatedReady: intstr.FromString("50%")},
			Needs: []Need{need("a", "n1")}, UpdatedReady: 2, Matched: 3},
		want: Result{States: map[types.UID]State{"a": Downloading}, Create: []Key{key("n1")}, Running: 1},
	}, {
		name: "parallelism 0 starts no pull and holds nothing",
		in:   Input{Config: Config{Timeout: time.Minute}, Needs: []Need{need("a", "n1")}},
		want: Result{States: map[types.UID]State{}},
	}, {
		name: "a pull no pod needs any more (upgraded, image changed again) is deleted",
		in: Input{Config: cfg, Needs: []Need{need("a", "n1")},
			Pulls: []Pull{pull("n1", Pulling, time.Second), pull("n9", Pulling, time.Second)}},
		want: Result{
			States: map[types.UID]State{"a": Downloading}, Delete: []Pull{pull("n9", Pulling, time.Second)}, Running: 1,
		},
	}, {
		name: "a pod without a node waits for no pull",
		in:   Input{Config: cfg, Needs: []Need{need("a", "")}},
		want: Result{States: map[types.UID]State{}},
	}, {
		name: "a pod with two new images is PreDownloaded once both are there",
		in: Input{Config: cfg, Needs: []Need{need("a", "n1", img, "reg.example/log:v2")},
			OnNode: func(_, image string) bool { return image == img }},
		want: Result{
			States: map[types.UID]State{"a": Downloading},
			Create: []Key{{Node: "n1", Image: "reg.example/log:v2"}}, Running: 1,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.Now.IsZero() {
				tt.in.Now = t0
			}
			got := Plan(tt.in)
			sortPulls := cmpopts.SortSlices(func(a, b Pull) bool { return a.Name < b.Name })
			if diff := cmp.Diff(&tt.want, got, cmpopts.EquateEmpty(), sortPulls); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanParallelismBound runs a whole pre-download: a pull ends two seconds after it starts, and
// each round (a second) upgrades the first pod in order whose upgrade waits for no pull. Never more
// pulls run than the parallelism, every node pulls once, in the rollout's order, and every pod is
// upgraded.
func TestPlanParallelismBound(t *testing.T) {
	cfg := Config{Parallelism: 3, Timeout: time.Hour}
	var needs []Need
	for i := range 10 {
		needs = append(needs, need(string(rune('a'+i)), "n"+string(rune('0'+i))))
	}
	var pulls []Pull
	ended := map[Key]Outcome{}
	var order []string
	now := t0
	for round := 0; len(needs) > 0 && round < 100; round++ {
		now = now.Add(time.Second)
		for i := range pulls {
			if now.Sub(pulls[i].Created) >= 2*time.Second {
				pulls[i].Phase = Pulled
			}
		}
		res := Plan(Input{Config: cfg, Now: now, Needs: needs, Pulls: pulls, Ended: ended})
		for _, o := range res.Ended {
			ended[o.Key] = o
		}
		deleted := map[string]bool{}
		for _, d := range res.Delete {
			deleted[d.Name] = true
		}
		next := pulls[:0:0]
		for _, p := range pulls {
			if !deleted[p.Name] {
				next = append(next, p)
			}
		}
		for _, k := range res.Create {
			order = append(order, k.Node)
			next = append(next, Pull{Key: k, Name: PodName("ss", k), Created: now, Phase: Pulling})
		}
		pulls = next
		if int32(len(pulls)) > cfg.Parallelism || res.Running != int32(len(pulls)) {
			t.Fatalf("round %d: %d pull pods (%d running in the plan), parallelism %d", round, len(pulls), res.Running, cfg.Parallelism)
		}
		if !res.Holds(needs[0].UID) {
			needs = needs[1:]
		}
	}
	want := []string{"n0", "n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("pull order (-want +got):\n%s", diff)
	}
	if len(needs) > 0 {
		t.Errorf("the rollout did not end: %d pods left", len(needs))
	}
}
