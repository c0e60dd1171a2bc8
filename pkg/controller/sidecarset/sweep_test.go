package sidecarset

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

func TestTermStart(t *testing.T) {
	quiet := func(name string) *v1alpha1.SidecarSet {
		return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2},
			Status: v1alpha1.SidecarSetStatus{ObservedGeneration: 2, MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3}}
	}
	with := func(name string, edit func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
		ss := quiet(name)
		edit(ss)
		return ss
	}
	sets := []*v1alpha1.SidecarSet{
		quiet("z-quiet"),
		with("edited", func(ss *v1alpha1.SidecarSet) { ss.Generation = 3 }),
		with("rolling", func(ss *v1alpha1.SidecarSet) { ss.Status.UpdatedPods, ss.Status.UpdatedReadyPods = 1, 1 }),
		with("unready", func(ss *v1alpha1.SidecarSet) { ss.Status.ReadyPods = 2 }),
		with("updated-unready", func(ss *v1alpha1.SidecarSet) { ss.Status.UpdatedReadyPods = 2 }),
		with("missed", func(ss *v1alpha1.SidecarSet) { ss.Status.NotInjectedPods = 1 }),
		with("pulling", func(ss *v1alpha1.SidecarSet) { ss.Status.PreDownloadingPods = 1 }),
		with("evicting", func(ss *v1alpha1.SidecarSet) { ss.Status.InFlightEvictions = []v1alpha1.InFlightEviction{{}} }),
		with("holding", func(ss *v1alpha1.SidecarSet) { ss.Status.NamespaceHolds = []v1alpha1.NamespaceHold{{}} }),
		with("backing-off", func(ss *v1alpha1.SidecarSet) { ss.Status.Backoffs = []v1alpha1.PodBackoff{{}} }),
		with("deleting", func(ss *v1alpha1.SidecarSet) { ss.DeletionTimestamp = &metav1.Time{} }),
		quiet("a-quiet"),
		{ObjectMeta: metav1.ObjectMeta{Name: "no-pods"}},
	}
	now, rest := termStart(sets)
	wantNow := []string{"backing-off", "deleting", "edited", "evicting", "holding", "missed", "pulling", "rolling", "unready", "updated-unready"}
	if diff := cmp.Diff(wantNow, now); diff != "" {
		t.Errorf("rounds at once (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a-quiet", "no-pods", "z-quiet"}, rest); diff != "" {
		t.Errorf("swept (-want +got):\n%s", diff)
	}
}

// TestSweeperKeepsTheQueueShort: the sweeper fills the queue to twice the workers whenever it
// holds fewer than the workers, so an event added meanwhile waits behind a few rounds; every name
// is queued in the end, and the sweeper stops with the term.
func TestSweeperKeepsTheQueueShort(t *testing.T) {
	const workers = 3
	q := workqueue.NewTyped[string]()
	defer q.ShutDown()
	names := make([]string, 100)
	for i := range names {
		names[i] = string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { newSweeper(names).run(ctx, q, workers, func() bool { return false }); close(done) }()
	waitLen(t, q, 2*workers)
	q.Add("edited") // an event: behind the six swept names only
	var got []string
	for len(got) < len(names)+1 {
		name, _ := q.Get()
		got = append(got, name)
		q.Done(name)
		if name == "edited" && len(got) > 2*workers+1 {
			t.Errorf("the event came out %dth", len(got))
		}
		if q.Len() > 3*workers { // at most workers-1 left, twice the workers added, and the event
			t.Fatalf("queue length %d, more than three times the workers", q.Len())
		}
	}
	if len(got) != len(names)+1 || got[len(got)-1] == "edited" {
		t.Errorf("queued %d names, last %q", len(got), got[len(got)-1])
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweeper outlived its term")
	}
}

// waitLen waits until q holds want names.
func waitLen(t *testing.T, q workqueue.TypedInterface[string], want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for q.Len() != want {
		if time.Now().After(deadline) {
			t.Fatalf("queue length %d, want %d", q.Len(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSweeperHoldsAndTakesMore: nothing is swept while the hold lasts (the term's first plan has
// not come); names added later (a Resync's quiet ones) are swept too, a name already waiting
// only once; the sweeper stops with its queue.
func TestSweeperHoldsAndTakesMore(t *testing.T) {
	q := workqueue.NewTyped[string]()
	var held atomic.Bool
	held.Store(true)
	sw := newSweeper([]string{"a", "b"})
	done := make(chan struct{})
	go func() { sw.run(context.Background(), q, 1, held.Load); close(done) }()
	time.Sleep(20 * sweepTick)
	if q.Len() != 0 {
		t.Fatalf("%d names queued during the hold", q.Len())
	}
	sw.add("b", "c", "a") // the plan names them again
	held.Store(false)
	var got []string
	for len(got) < 3 {
		name, _ := q.Get()
		got = append(got, name)
		q.Done(name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("swept (-want +got):\n%s", diff)
	}
	sw.add("d") // a later plan's
	if name, _ := q.Get(); name != "d" {
		t.Errorf("swept %q, want d", name)
	}
	time.Sleep(20 * sweepTick)
	if q.Len() != 0 {
		t.Errorf("%d more names swept, want none", q.Len())
	}
	q.ShutDown()
	sw.add("e") // wakes the sweeper, which sees the queue shut down
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweeper outlived its queue")
	}
}

// TestUnderWay: a Resync names SidecarSets in any order; those with work under way (an edit not
// observed yet, pods to upgrade) or not cached are queued at once, the quiet ones swept, each
// part in the order given.
func TestUnderWay(t *testing.T) {
	quiet := func(name string) *v1alpha1.SidecarSet {
		return &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
			Status: v1alpha1.SidecarSetStatus{ObservedGeneration: 1}}
	}
	edited := func(name string) *v1alpha1.SidecarSet {
		ss := quiet(name)
		ss.Generation = 2
		return ss
	}
	upgrading := func(name string) *v1alpha1.SidecarSet {
		ss := quiet(name)
		ss.Status.MatchedPods = 3
		return ss
	}
	for _, tc := range []struct {
		name       string
		names      []string
		sets       map[string]*v1alpha1.SidecarSet
		now, quiet []string
	}{
		{"all quiet: as given", []string{"c", "a", "b"},
			map[string]*v1alpha1.SidecarSet{"a": quiet("a"), "b": quiet("b"), "c": quiet("c")}, nil, []string{"c", "a", "b"}},
		{"an edit after a restart at once", []string{"a", "b", "c", "d"},
			map[string]*v1alpha1.SidecarSet{"a": quiet("a"), "b": quiet("b"), "c": edited("c"), "d": quiet("d")}, []string{"c"}, []string{"a", "b", "d"}},
		{"a rollout and a gone one at once", []string{"a", "b", "gone", "c"},
			map[string]*v1alpha1.SidecarSet{"a": quiet("a"), "b": upgrading("b"), "c": edited("c")}, []string{"b", "gone", "c"}, []string{"a"}},
		{"none", nil, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now, quiet := underWay(tc.names, func(name string) *v1alpha1.SidecarSet { return tc.sets[name] })
			if !cmp.Equal(now, tc.now) || !cmp.Equal(quiet, tc.quiet) {
				t.Errorf("underWay = %v, %v; want %v, %v", now, quiet, tc.now, tc.quiet)
			}
		})
	}
}

// TestResyncSweepsTheQuiet: a Resync (a plan naming SidecarSets) queues at once those with work
// under way and has the quiet ones swept; with no sweep (between its start and the term's list)
// it queues them all.
func TestResyncSweepsTheQuiet(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for name, g := range map[string]int64{"quiet": 1, "edited": 2} {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: g}, Status: v1alpha1.SidecarSetStatus{ObservedGeneration: 1}}
		if err := idx.Add(ss); err != nil {
			t.Fatal(err)
		}
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	c := &Controller{sets: listers.NewSidecarSetLister(idx), queue: q}
	c.Resync("quiet", "edited")
	if q.Len() != 2 {
		t.Fatalf("without a sweep: %d queued, want 2", q.Len())
	}
	for q.Len() > 0 {
		name, _ := q.Get()
		q.Done(name)
	}
	c.sweep = newSweeper(nil)
	c.Resync("quiet", "edited")
	if name, _ := q.Get(); name != "edited" || q.Len() != 0 {
		t.Errorf("queued %q and %d more, want edited alone", name, q.Len())
	}
	if got := c.sweep.take(10); !cmp.Equal(got, []string{"quiet"}) {
		t.Errorf("swept %v, want quiet", got)
	}
}

// TestEnqueueWhileATermStarts: while a term starts (its queue there, its sweep not yet), the
// informer's replayed adds of quiet SidecarSets are left to the term's start, those with work
// under way are queued; once the term runs, every event is queued.
func TestEnqueueWhileATermStarts(t *testing.T) {
	quiet := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Generation: 1}, Status: v1alpha1.SidecarSetStatus{ObservedGeneration: 1}}
	edited := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "edited", Generation: 2}, Status: v1alpha1.SidecarSetStatus{ObservedGeneration: 1}}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	c := &Controller{queue: q}
	c.enqueue(quiet)
	c.enqueue(edited)
	if name, _ := q.Get(); name != "edited" || q.Len() != 0 {
		t.Fatalf("while the term starts: queued %q and %d more, want edited alone", name, q.Len())
	}
	q.Done("edited")
	c.sweep = newSweeper(nil)
	c.enqueue(quiet)
	if name, _ := q.Get(); name != "quiet" {
		t.Errorf("once the term runs: queued %q, want quiet", name)
	}
}
