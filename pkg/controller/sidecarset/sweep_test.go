package sidecarset

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
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

// TestSweepKeepsTheQueueShort: the sweep fills the queue to twice the workers whenever it holds
// fewer than the workers, so an event added meanwhile waits behind a few rounds; every name is
// queued in the end, and the sweep stops with the queue.
func TestSweepKeepsTheQueueShort(t *testing.T) {
	const workers = 3
	q := workqueue.NewTyped[string]()
	defer q.ShutDown()
	names := make([]string, 100)
	for i := range names {
		names[i] = string(rune('A'+i/26)) + string(rune('a'+i%26))
	}
	done := make(chan struct{})
	go func() { sweep(context.Background(), q, names, workers); close(done) }()
	waitLen := func(want int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for q.Len() != want {
			if time.Now().After(deadline) {
				t.Fatalf("queue length %d, want %d", q.Len(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitLen(2 * workers)
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
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep did not end once every name was queued")
	}
	if len(got) != len(names)+1 || got[len(got)-1] == "edited" {
		t.Errorf("queued %d names, last %q", len(got), got[len(got)-1])
	}
}

func TestSweepStopsWithTheQueue(t *testing.T) {
	q := workqueue.NewTyped[string]()
	done := make(chan struct{})
	go func() { sweep(context.Background(), q, []string{"a", "b", "c", "d", "e", "f", "g"}, 1); close(done) }()
	for q.Len() < 2 {
		time.Sleep(time.Millisecond)
	}
	q.ShutDown()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep outlived its queue")
	}
}

// TestUnderWayFirst: a Resync names SidecarSets in any order; those with work under way (an edit
// not observed yet, pods to upgrade) or not cached go first, the quiet ones after, each part in
// the order given.
func TestUnderWayFirst(t *testing.T) {
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
		name  string
		names []string
		sets  map[string]*v1alpha1.SidecarSet
		want  []string
	}{
		{"all quiet: as given", []string{"c", "a", "b"},
			map[string]*v1alpha1.SidecarSet{"a": quiet("a"), "b": quiet("b"), "c": quiet("c")}, []string{"c", "a", "b"}},
		{"an edit after a restart goes first", []string{"a", "b", "c", "d"},
			map[string]*v1alpha1.SidecarSet{"a": quiet("a"), "b": quiet("b"), "c": edited("c"), "d": quiet("d")}, []string{"c", "a", "b", "d"}},
		{"a rollout and a gone one before the quiet", []string{"a", "b", "gone", "c"},
			map[string]*v1alpha1.SidecarSet{"a": quiet("a"), "b": upgrading("b"), "c": edited("c")}, []string{"b", "gone", "c", "a"}},
		{"none", nil, nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := underWayFirst(tc.names, func(name string) *v1alpha1.SidecarSet { return tc.sets[name] })
			if !cmp.Equal(got, tc.want) {
				t.Errorf("underWayFirst = %v, want %v", got, tc.want)
			}
		})
	}
}
