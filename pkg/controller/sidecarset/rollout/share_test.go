package rollout

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The expected shares below are worked out by hand from the rule of share.go:
// share = max(1, min(B-1, ceil(B*n/N))), 0 when B is 0.
func TestNamespaceShare(t *testing.T) {
	for _, tc := range []struct {
		name        string
		b, n, total int32
		want        int32
	}{
		{name: "even split", b: 4, n: 5, total: 10, want: 2},                          // ceil(20/10) = 2
		{name: "rounded up", b: 10, n: 33, total: 100, want: 4},                       // ceil(3.3) = 4
		{name: "a small namespace gets one", b: 3, n: 1, total: 10, want: 1},          // ceil(0.3) = 1
		{name: "a tiny share rounds up to one", b: 2, n: 1, total: 1000, want: 1},     // ceil(0.002) = 1
		{name: "most pods: never the whole budget", b: 4, n: 95, total: 100, want: 3}, // ceil(3.8) = 4, min(3, 4)
		{name: "every pod: never the whole budget", b: 5, n: 10, total: 10, want: 4},  // min(4, 5)
		{name: "B=2: one place each", b: 2, n: 9, total: 10, want: 1},                 // ceil(1.8) = 2, min(1, 2)
		{name: "B=1, many namespaces: the one place", b: 1, n: 1, total: 50, want: 1}, // max(1, min(0, 1))
		{name: "B=1, most pods", b: 1, n: 49, total: 50, want: 1},                     // max(1, min(0, 1))
		{name: "B=0", b: 0, n: 3, total: 6, want: 0},
		{name: "no pods", b: 3, n: 0, total: 0, want: 1},                                       // max(1, ...)
		{name: "huge B does not overflow", b: math.MaxInt32, n: 2, total: 3, want: 1431655765}, // ceil(2147483647*2/3)
		{name: "huge B, every pod", b: math.MaxInt32, n: 3, total: 3, want: math.MaxInt32 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NamespaceShare(tc.b, tc.n, tc.total); got != tc.want {
				t.Errorf("NamespaceShare(%d, %d, %d) = %d, want %d", tc.b, tc.n, tc.total, got, tc.want)
			}
		})
	}
}

func budget(v string) *v1alpha1.SidecarSet {
	return strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr(v) })
}

// TestPlanNamespaceShare: the pods are ready since the same moment, so candidates are taken by
// namespace/name; "r" pods are upgraded and restarting (each holds a place of its namespace).
func TestPlanNamespaceShare(t *testing.T) {
	const share = "Waiting/" + ReasonNamespaceShare
	for _, tc := range []struct {
		name    string
		ss      *v1alpha1.SidecarSet
		pods    []*corev1.Pod
		lapsed  map[string]bool
		upgrade []string
		states  map[string]string // of some pods
		holding map[string]int32
		holder  string
		unavail int32
	}{{
		// N=6, B=2: share(a) = min(1, ceil(2*3/6)) = 1, share(b) = 1. a's restarting pod holds a's
		// share: its other pods wait; b takes the other place.
		name: "a namespace's unavailable pod holds its share, the others go on",
		ss:   budget("2"),
		pods: []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), old("a2", inNamespace("a")),
			old("b1", inNamespace("b")), old("b2", inNamespace("b")), old("b3", inNamespace("b"))},
		upgrade: []string{"b1"},
		states:  map[string]string{"a1": share, "a2": share, "b1": selected, "b2": share, "b3": share},
		holding: map[string]int32{"a": 1}, unavail: 1,
	}, {
		// N=10, B=4: share(a) = max(1, ceil(0.4)) = 1, share(b) = ceil(1.2) = 2, share(c) =
		// ceil(2.4) = 3. a0, b0, b1 and c0 fill B; b2 waits for b's share, c1 for B.
		name: "shares rounded up, the total never above B",
		ss:   budget("4"),
		pods: []*corev1.Pod{old("a0", inNamespace("a")), old("b0", inNamespace("b")), old("b1", inNamespace("b")), old("b2", inNamespace("b")),
			old("c0", inNamespace("c")), old("c1", inNamespace("c")), old("c2", inNamespace("c")), old("c3", inNamespace("c")), old("c4", inNamespace("c")), old("c5", inNamespace("c"))},
		upgrade: []string{"a0", "b0", "b1", "c0"},
		states:  map[string]string{"b2": share, "c1": overBudget, "c5": overBudget},
		holding: map[string]int32{},
	}, {
		// c (8 pods) has nothing left to upgrade: a and b compete, N=8. share(a) = share(b) =
		// min(3, ceil(4*4/8)) = 2: together the whole budget, none left unused.
		name: "namespaces with nothing to upgrade leave their part",
		ss:   budget("4"),
		pods: append(append(oldPods("a", 4), oldPods("b", 4)...), updatedPod("c0", inNamespace("c")), updatedPod("c1", inNamespace("c")),
			updatedPod("c2", inNamespace("c")), updatedPod("c3", inNamespace("c")), updatedPod("c4", inNamespace("c")),
			updatedPod("c5", inNamespace("c")), updatedPod("c6", inNamespace("c")), updatedPod("c7", inNamespace("c"))),
		upgrade: []string{"a0", "a1", "b0", "b1"},
		states:  map[string]string{"a2": share, "a3": share, "b2": share},
		holding: map[string]int32{},
	}, {
		// B=1: every share is the one place, which a's restarting pod holds; b and c wait for B,
		// and a holds every place while they wait: the holder.
		name:    "B=1, many namespaces: the holder",
		ss:      budget("1"),
		pods:    []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), old("b1", inNamespace("b")), old("c1", inNamespace("c"))},
		states:  map[string]string{"a1": share, "b1": overBudget, "c1": overBudget},
		holding: map[string]int32{"a": 1}, holder: "a", unavail: 1,
	}, {
		// Once a's hold lapsed, its pod counts against a's share alone: b takes the place.
		name:    "B=1, the hold lapsed: the others go on, the namespace stays within its share",
		ss:      budget("1"),
		pods:    []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), old("b1", inNamespace("b")), old("c1", inNamespace("c"))},
		lapsed:  map[string]bool{"a": true},
		upgrade: []string{"b1"},
		states:  map[string]string{"a1": share, "b1": selected, "c1": overBudget},
		holding: map[string]int32{"a": 1},
	}, {
		// No other namespace waits: a is bounded by B alone (3), less its restarting pod.
		name: "uncontested: the last namespace has the whole budget",
		ss:   budget("3"),
		pods: []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), old("a2", inNamespace("a")), old("a3", inNamespace("a")),
			updatedPod("bu", inNamespace("b"))},
		upgrade: []string{"a1", "a2"},
		states:  map[string]string{"a3": overBudget},
		holding: map[string]int32{"a": 1}, unavail: 1,
	}, {
		// Lapsed, a stays within its share (1) even with no other namespace waiting.
		name:    "uncontested but lapsed: within its share",
		ss:      budget("1"),
		pods:    []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), updatedPod("bu", inNamespace("b"))},
		lapsed:  map[string]bool{"a": true},
		states:  map[string]string{"a1": share},
		holding: map[string]int32{"a": 1},
	}, {
		// One namespace: no shares, as before.
		name:    "one namespace: maxUnavailable alone",
		ss:      budget("2"),
		pods:    []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), old("a2", inNamespace("a"))},
		upgrade: []string{"a1"},
		states:  map[string]string{"a2": overBudget},
		unavail: 1,
	}, {
		// N=10, B=4: share(a) = min(3, ceil(4*3/10)) = 2, which a's two restarting pods hold.
		name: "pods leaving, before: a holds its share",
		ss:   budget("4"),
		pods: append([]*corev1.Pod{restartingPod("ra1", inNamespace("a")), restartingPod("ra2", inNamespace("a")), old("a1", inNamespace("a"))},
			oldPods("b", 7)...),
		upgrade: []string{"b0", "b1"},
		states:  map[string]string{"a1": share, "b2": overBudget},
		holding: map[string]int32{"a": 2}, unavail: 2,
	}, {
		// Five of b's pods left: N=5, share(a) = min(3, ceil(4*3/5)) = 3: a1 fits; share(b) =
		// min(3, ceil(4*2/5)) = 2, but B is full after b0.
		name: "pods leaving, after: a's share grows",
		ss:   budget("4"),
		pods: append([]*corev1.Pod{restartingPod("ra1", inNamespace("a")), restartingPod("ra2", inNamespace("a")), old("a1", inNamespace("a"))},
			oldPods("b", 2)...),
		upgrade: []string{"a1", "b0"},
		states:  map[string]string{"b1": overBudget},
		holding: map[string]int32{"a": 2}, unavail: 2,
	}, {
		// A percentage resolves against every managed pod: 50% of 4 is 2. A pod that is not ready
		// costs nothing and is taken whatever the shares; then only b has ready pods waiting, so B
		// alone bounds it: b1 takes the place a's restarting pod leaves, b2 waits for B.
		name:    "percentage, pods not ready cost nothing",
		ss:      budget("50%"),
		pods:    []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a"), notReady), old("b1", inNamespace("b")), old("b2", inNamespace("b"))},
		upgrade: []string{"a1", "b1"},
		states:  map[string]string{"b2": overBudget},
		holding: map[string]int32{"a": 1}, unavail: 1,
	}, {
		// Two pods a's editor created with the current sidecars never become ready: they hold
		// a's share (1) and count against it alone; b's pods go on within B. N=5, B=2,
		// share(b) = min(1, ceil(2*2/5)) = 1.
		name: "pods created with the current sidecars hold their namespace's share alone",
		ss:   budget("2"),
		pods: []*corev1.Pod{updatedPod("na1", inNamespace("a"), notReady), updatedPod("na2", inNamespace("a"), notReady),
			old("a1", inNamespace("a")), old("b1", inNamespace("b")), old("b2", inNamespace("b"))},
		upgrade: []string{"b1"},
		states:  map[string]string{"a1": share, "b1": selected, "b2": share},
		holding: map[string]int32{"a": 2},
	}, {
		// The same pods as the only other namespace's: a is uncontested, yet stays within its
		// share, which they hold.
		name: "pods created with the current sidecars, uncontested: their namespace waits",
		ss:   budget("2"),
		pods: []*corev1.Pod{updatedPod("na1", inNamespace("a"), notReady), updatedPod("na2", inNamespace("a"), notReady),
			old("a1", inNamespace("a")), updatedPod("bu", inNamespace("b"))},
		states:  map[string]string{"a1": share},
		holding: map[string]int32{"a": 2},
	}, {
		// In one namespace they count against maxUnavailable, as in OpenKruise: new pods that
		// fail with the new sidecars stop its rollout.
		name:    "pods created with the current sidecars, one namespace: maxUnavailable",
		ss:      budget("2"),
		pods:    []*corev1.Pod{updatedPod("na1", notReady), updatedPod("na2", notReady), old("a1")},
		states:  map[string]string{"a1": overBudget},
		unavail: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			res := PlanWith(tc.ss, cached(tc.pods), Options{Lapsed: tc.lapsed})
			if diff := cmp.Diff(tc.upgrade, names(res.Upgrade), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("upgrade (-want +got):\n%s", diff)
			}
			got := states(res)
			for name, want := range tc.states {
				if got[name] != want {
					t.Errorf("pod %s: %s, want %s", name, got[name], want)
				}
			}
			if diff := cmp.Diff(tc.holding, res.Holding); diff != "" {
				t.Errorf("holding (-want +got):\n%s", diff)
			}
			if res.Holder != tc.holder || res.Unavailable != tc.unavail {
				t.Errorf("holder %q, unavailable %d; want %q, %d", res.Holder, res.Unavailable, tc.holder, tc.unavail)
			}
		})
	}
}

func oldPods(ns string, n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i, name := range podNames(ns, n) {
		out[i] = old(name, inNamespace(ns))
	}
	return out
}

func TestPlanNamespaceShareMessages(t *testing.T) {
	ss := budget("1")
	pods := []*corev1.Pod{restartingPod("ra", inNamespace("a")), old("a1", inNamespace("a")), old("b1", inNamespace("b"))}
	res := PlanWith(ss, cached(pods), Options{})
	want := "namespace a's share of maxUnavailable 1 is 1 (its 2 pods of the 3 in namespaces with pods waiting for their upgrade): 1 of its pods hold it (ra)"
	if got := planOf(res, "a1").Message; got != want {
		t.Errorf("a1: %q, want %q", got, want)
	}
	if got := planOf(res, "b1").Message; !strings.Contains(got, "the pods of namespace a hold every place: if they still do after 10m0s") {
		t.Errorf("b1: %q, want it to name the holder", got)
	}
	res = PlanWith(ss, cached(pods), Options{Lapsed: map[string]bool{"a": true}})
	if got := planOf(res, "a1").Message; !strings.HasPrefix(got, want+"; they held every place of maxUnavailable for 10m0s") {
		t.Errorf("a1, lapsed: %q", got)
	}

	// Many holders: three are named.
	ss = budget("5")
	pods = []*corev1.Pod{restartingPod("r5", inNamespace("a")), restartingPod("r4", inNamespace("a")), restartingPod("r3", inNamespace("a")),
		restartingPod("r2", inNamespace("a")), old("a1", inNamespace("a")), old("b1", inNamespace("b"))}
	res = PlanWith(ss, cached(pods), Options{})
	want = "namespace a's share of maxUnavailable 5 is 4 (its 5 pods of the 6 in namespaces with pods waiting for their upgrade): 4 of its pods hold it (r2, r3, r4 and 1 more)"
	if got := planOf(res, "a1").Message; got != want {
		t.Errorf("a1: %q, want %q", got, want)
	}
}

// TestPlanNamespacedSidecarSetHasOneShare: a NamespacedSidecarSet is never divided, whatever
// namespaces its pods claim.
func TestPlanNamespacedSidecarSetHasOneShare(t *testing.T) {
	rename := func(ss *v1alpha1.SidecarSet) *v1alpha1.SidecarSet {
		out := ss.DeepCopy()
		out.Name = "a.logs"
		return out
	}
	v1, v2 := rename(ssV1), rename(ssV2)
	v2.Spec.UpdateStrategy.MaxUnavailable = intOrStr("2")
	restarting := newPod("ra", v1, inNamespace("a"))
	upgradePod(restarting, v2, t0)
	pods := []*corev1.Pod{restarting, newPod("a1", v1, inNamespace("a")), newPod("a2", v1, inNamespace("a")), newPod("b1", v1, inNamespace("b"))}
	res := PlanWith(v2, cached(pods), Options{})
	if diff := cmp.Diff([]string{"a1"}, names(res.Upgrade)); diff != "" {
		t.Errorf("upgrade (-want +got):\n%s", diff)
	}
	if res.Holding != nil {
		t.Errorf("holding %v, want no shares", res.Holding)
	}
}

// TestPreviewNamespaceShare: B=2 over a (3 pods) and b (1): shares 1 and 1. Batch 1 takes a0 and
// b0; then only a waits, uncontested: a1 and a2 together.
func TestPreviewNamespaceShare(t *testing.T) {
	pods := []*corev1.Pod{old("a0", inNamespace("a")), old("a1", inNamespace("a")), old("a2", inNamespace("a")), old("b0", inNamespace("b"))}
	res := Preview(budget("2"), cached(pods))
	got := map[string]int32{}
	for _, pp := range res.Pods {
		got[pp.Pod.Name] = pp.Batch
	}
	if diff := cmp.Diff(map[string]int32{"a0": 1, "b0": 1, "a1": 2, "a2": 2}, got); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}
