package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

var recordT0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func hold(ns string, since time.Duration, lapsed bool) v1alpha1.NamespaceHold {
	return v1alpha1.NamespaceHold{Namespace: ns, Since: metav1.NewTime(recordT0.Add(since)), Lapsed: lapsed}
}

func TestLapsedHolds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds []v1alpha1.NamespaceHold
		after time.Duration
		want  map[string]bool
	}{
		{name: "none"},
		{name: "held less than the lapse", holds: []v1alpha1.NamespaceHold{hold("a", 0, false)}, after: 10*time.Minute - time.Second},
		{name: "held for the lapse", holds: []v1alpha1.NamespaceHold{hold("a", 0, false)}, after: 10 * time.Minute, want: map[string]bool{"a": true}},
		{name: "recorded lapsed", holds: []v1alpha1.NamespaceHold{hold("b", 0, true), hold("a", time.Minute, false)}, after: time.Minute,
			want: map[string]bool{"b": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, LapsedHolds(tc.holds, recordT0.Add(tc.after))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextHolds(t *testing.T) {
	now := recordT0.Add(20 * time.Minute)
	for _, tc := range []struct {
		name      string
		prev      []v1alpha1.NamespaceHold
		lapsed    map[string]bool
		plan      Result
		want      []v1alpha1.NamespaceHold
		wantNewly []string
	}{
		{name: "nobody holds"},
		{name: "a new holder is timed from now", plan: Result{Holder: "a", Holding: map[string]int32{"a": 1}},
			want: []v1alpha1.NamespaceHold{hold("a", 20*time.Minute, false)}},
		{name: "the same holder keeps its start", prev: []v1alpha1.NamespaceHold{hold("a", time.Minute, false)},
			plan: Result{Holder: "a", Holding: map[string]int32{"a": 1}}, want: []v1alpha1.NamespaceHold{hold("a", time.Minute, false)}},
		{name: "another holder starts over", prev: []v1alpha1.NamespaceHold{hold("a", time.Minute, false)},
			plan: Result{Holder: "b", Holding: map[string]int32{"a": 1, "b": 1}}, want: []v1alpha1.NamespaceHold{hold("b", 20*time.Minute, false)}},
		{name: "a holder that lapses with this round", prev: []v1alpha1.NamespaceHold{hold("a", 0, false)}, lapsed: map[string]bool{"a": true},
			plan: Result{Holding: map[string]int32{"a": 1}}, want: []v1alpha1.NamespaceHold{hold("a", 0, true)}, wantNewly: []string{"a"}},
		{name: "a lapsed namespace that still holds stays lapsed", prev: []v1alpha1.NamespaceHold{hold("a", 0, true)}, lapsed: map[string]bool{"a": true},
			plan: Result{Holder: "b", Holding: map[string]int32{"a": 1, "b": 1}},
			want: []v1alpha1.NamespaceHold{hold("a", 0, true), hold("b", 20*time.Minute, false)}},
		{name: "a lapsed namespace that holds nothing any more goes", prev: []v1alpha1.NamespaceHold{hold("a", 0, true)}, lapsed: map[string]bool{"a": true},
			plan: Result{Holding: map[string]int32{"b": 1}}},
		{name: "a lapsed namespace that holds again is timed anew", prev: []v1alpha1.NamespaceHold{hold("a", 0, true)},
			plan: Result{Holder: "a", Holding: map[string]int32{"a": 1}}, want: []v1alpha1.NamespaceHold{hold("a", 20*time.Minute, false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, newly := NextHolds(tc.prev, tc.lapsed, &tc.plan, now)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("holds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNewly, newly); diff != "" {
				t.Errorf("newly lapsed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEvictionsRecord: evictions recorded in a status read back as the same evictions (at the
// second), one per pod, the latest kept, ordered by time.
func TestEvictionsRecord(t *testing.T) {
	at := recordT0.Add(1500 * time.Millisecond)
	memory := []Eviction{
		{Namespace: "ns", Name: "b", Owner: "rs", Want: 3, At: at},
		{Namespace: "ns", Name: "a", Owner: "rs", Want: 3, At: at.Add(time.Minute)},
	}
	recorded := EvictionsStatus(memory)
	want := []v1alpha1.InFlightEviction{
		{Namespace: "ns", Name: "b", OwnerUID: "rs", OwnerPods: 3, Time: metav1.NewTime(recordT0.Add(time.Second))},
		{Namespace: "ns", Name: "a", OwnerUID: "rs", OwnerPods: 3, Time: metav1.NewTime(recordT0.Add(61 * time.Second))},
	}
	if diff := cmp.Diff(want, recorded); diff != "" {
		t.Fatalf("EvictionsStatus (-want +got):\n%s", diff)
	}
	merged := MergeEvictions(memory, EvictionsFromStatus(recorded))
	if len(merged) != 2 || merged[0].Name != "b" || merged[1].Name != "a" {
		t.Errorf("memory merged with its own record: %+v, want b then a, once each", merged)
	}
	again := []Eviction{{Namespace: "ns", Name: "b", Owner: "rs", Want: 2, At: at.Add(2 * time.Minute)}}
	if merged := MergeEvictions(memory, again); len(merged) != 2 || merged[1].Name != "b" || merged[1].Want != 2 {
		t.Errorf("a later eviction of b: %+v, want it kept, last", merged)
	}
	if EvictionsStatus(nil) != nil {
		t.Error("no evictions recorded as a non-nil list")
	}
}
