package rollout

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The versions of SidecarSet "ss" used below: v1 and v2 differ by image only; v3 changes
// something else (a new without-image hash).
var (
	ssV1 = newSidecarSet("sidecar:v1", "h1", "nh1")
	ssV2 = withVersion(ssV1, "sidecar:v2", "h2", "nh1")
)

const (
	updated      = "Updated/"
	selected     = "Upgrading/Selected"
	restarting   = "Upgrading/Restarting"
	partitioned  = "Waiting/Partition"
	overBudget   = "Waiting/MaxUnavailable"
	notUpgrdable = "NotUpgradable/UpdateImmutableField"
)

// states returns "State/Reason" by pod name.
func states(res *Result) map[string]string {
	out := map[string]string{}
	for _, pp := range res.Pods {
		out[pp.Pod.Name] = string(pp.State) + "/" + pp.Reason
	}
	return out
}

// strategy returns ssV2 with its update strategy edited.
func strategy(edit func(*v1alpha1.SidecarSetUpdateStrategy)) *v1alpha1.SidecarSet {
	ss := ssV2.DeepCopy()
	edit(&ss.Spec.UpdateStrategy)
	return ss
}

// old returns pod name injected from v1 (waiting for v2); updatedPod one injected from v2.
func old(name string, opts ...func(*corev1.Pod)) *corev1.Pod { return newPod(name, ssV1, opts...) }

func updatedPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	return newPod(name, ssV2, opts...)
}

// restartingPod returns pod name, created from v1 an hour before, upgraded to v2 at t0, whose
// sidecar has not restarted yet.
func restartingPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := old(name, createdAt(t0.Add(-time.Hour)))
	upgradePod(p, ssV2, t0)
	for _, o := range opts {
		o(p)
	}
	return p
}

// upgradedNotReady marks the pod as an in-place upgrade writes one that was not ready.
func upgradedNotReady(p *corev1.Pod) {
	sidecar.SetUpgradeState(p.Annotations, "ss", sidecar.UpgradeState{State: "Upgrading", Reason: "Restarting", NotReadyBefore: true})
}

// unscheduled makes the pod Pending on no node, without container statuses.
func unscheduled(p *corev1.Pod) {
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{Phase: corev1.PodPending}
}

func inNamespace(ns string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Namespace = ns }
}

func sidecarNotReady(p *corev1.Pod) {
	statusOf(p, "sidecar").Ready = false
	notReady(p)
}

func waiting(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		statusOf(p, "sidecar").State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
		sidecarNotReady(p)
	}
}

func TestPlanStates(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ss          *v1alpha1.SidecarSet
		pods        []*corev1.Pod
		want        map[string]string
		upgrade     []string
		unbudgeted  []string // of upgrade: taken because not ready
		notUpgrade  []string
		counts      Counts
		unavailable int32
	}{
		{
			name:    "default strategy upgrades one ready pod at a time",
			ss:      ssV2,
			pods:    []*corev1.Pod{old("a"), old("b"), old("c")},
			want:    map[string]string{"a": selected, "b": overBudget, "c": overBudget},
			upgrade: []string{"a"},
			counts:  Counts{Matched: 3, Ready: 3},
		},
		{
			name:        "updated pods: ready, restarting, not ready, failed",
			ss:          strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("10") }),
			pods:        []*corev1.Pod{updatedPod("ok"), restartingPod("restart"), updatedPod("unready", notReady), updatedPod("pull", waiting("ImagePullBackOff")), old("z")},
			want:        map[string]string{"ok": updated, "restart": restarting, "unready": "Updated/NotReady", "pull": "Failed/ImagePullBackOff", "z": selected},
			upgrade:     []string{"z"},
			counts:      Counts{Matched: 5, Updated: 4, Ready: 2, UpdatedReady: 1},
			unavailable: 3,
		},
		{
			name: "a restarting pod uses the budget; a not-ready candidate is free",
			ss:   ssV2,
			pods: []*corev1.Pod{restartingPod("r"), old("ready"), old("unready", notReady)},
			want: map[string]string{"r": restarting, "ready": overBudget, "unready": selected},
			// the not-ready candidate sorts first and costs nothing
			upgrade:     []string{"unready"},
			unbudgeted:  []string{"unready"},
			counts:      Counts{Matched: 3, Updated: 1, Ready: 1},
			unavailable: 1,
		},
		{
			name: "the walk stops at the first ready candidate over budget (later not-ready ones wait)",
			ss: strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{OrderPriority: []v1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "idx"}}}
			}),
			pods: []*corev1.Pod{
				old("a", labelled("idx", "3")), old("b", labelled("idx", "2")), old("c", labelled("idx", "1"), notReady),
			},
			want:    map[string]string{"a": selected, "b": overBudget, "c": overBudget},
			upgrade: []string{"a"},
			counts:  Counts{Matched: 3, Ready: 2},
		},
		{
			name:       "maxUnavailable 0 blocks every ready pod but takes not-ready ones",
			ss:         strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("0") }),
			pods:       []*corev1.Pod{old("a"), old("b", notReady), old("c")},
			want:       map[string]string{"a": overBudget, "b": selected, "c": overBudget},
			upgrade:    []string{"b"},
			unbudgeted: []string{"b"},
			counts:     Counts{Matched: 3, Ready: 2},
		},
		{
			name: "partition keeps the last candidates",
			ss: strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Partition, s.MaxUnavailable = intOrStr("3"), intOrStr("100%")
			}),
			pods:    []*corev1.Pod{old("a"), old("b"), old("c"), old("d"), old("e", readySince(t0.Add(-1)))},
			want:    map[string]string{"a": selected, "b": selected, "c": partitioned, "d": partitioned, "e": partitioned},
			upgrade: []string{"a", "b"},
			counts:  Counts{Matched: 5, Ready: 5},
		},
		{
			name: "partition counts candidates only: updated and not-upgradable pods are outside it",
			ss: strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Partition, s.MaxUnavailable = intOrStr("2"), intOrStr("100%")
			}),
			pods: []*corev1.Pod{updatedPod("u1"), updatedPod("u2"), old("x", injectedFrom("h0", "nh0")), old("a"), old("b"), old("c")},
			want: map[string]string{"u1": updated, "u2": updated, "x": notUpgrdable, "a": selected, "b": partitioned, "c": partitioned},
			// 3 candidates - partition 2 = 1 upgrade, although 6 - 2 = 4 > 2 updated
			upgrade:    []string{"a"},
			notUpgrade: []string{"x"},
			counts:     Counts{Matched: 6, Updated: 2, Ready: 6, UpdatedReady: 2},
		},
		{
			name:   "partition larger than the candidates",
			ss:     strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.Partition = intOrStr("5") }),
			pods:   []*corev1.Pod{updatedPod("u1"), old("a"), old("b")},
			want:   map[string]string{"u1": updated, "a": partitioned, "b": partitioned},
			counts: Counts{Matched: 3, Updated: 1, Ready: 3, UpdatedReady: 1},
		},
		{
			name:   "paused: nothing upgrades, not-upgradable pods are not reported",
			ss:     strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.Paused = true }),
			pods:   []*corev1.Pod{old("a"), old("b", notReady), old("x", injectedFrom("h0", "nh0")), updatedPod("u")},
			want:   map[string]string{"a": "Waiting/Paused", "b": "Waiting/Paused", "x": notUpgrdable, "u": updated},
			counts: Counts{Matched: 4, Updated: 1, Ready: 3, UpdatedReady: 1},
		},
		{
			name: "NotUpdate: nothing upgrades, not-upgradable pods are not reported",
			ss: strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Type, s.Paused = v1alpha1.NotUpdateSidecarSetStrategyType, true
			}),
			pods:   []*corev1.Pod{old("a"), old("x", injectedFrom("h0", "nh0"))},
			want:   map[string]string{"a": "Waiting/NotUpdateStrategy", "x": notUpgrdable},
			counts: Counts{Matched: 2, Ready: 2},
		},
		{
			name: "updateStrategy.selector picks the pods to upgrade",
			ss: strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
				s.MaxUnavailable = intOrStr("5")
			}),
			pods: []*corev1.Pod{
				old("a"), old("b", labelled("canary", "true")), old("c", labelled("canary", "true")),
				old("x", injectedFrom("h0", "nh0")), old("y", labelled("canary", "true"), injectedFrom("h0", "nh0")),
			},
			want:       map[string]string{"a": "Waiting/NotSelected", "b": selected, "c": selected, "x": "Waiting/NotSelected", "y": notUpgrdable},
			upgrade:    []string{"b", "c"},
			notUpgrade: []string{"y"},
			counts:     Counts{Matched: 5, Ready: 5},
		},
		{
			name: "an invalid updateStrategy.selector selects nothing",
			ss: strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
				s.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}}
			}),
			pods:   []*corev1.Pod{old("a")},
			want:   map[string]string{"a": "Waiting/NotSelected"},
			counts: Counts{Matched: 1, Ready: 1},
		},
		{
			name: "not upgradable: other fields changed, or no without-image entry",
			ss:   ssV2,
			pods: []*corev1.Pod{
				old("x", injectedFrom("h0", "nh0")),
				old("y", func(p *corev1.Pod) { delete(p.Annotations, sidecar.HashWithoutImageAnnotation) }),
				old("z", func(p *corev1.Pod) { p.Annotations[sidecar.HashWithoutImageAnnotation] = "{garbage" }),
				old("a"),
			},
			want:       map[string]string{"x": notUpgrdable, "y": notUpgrdable, "z": notUpgrdable, "a": selected},
			upgrade:    []string{"a"},
			notUpgrade: []string{"x", "y", "z"},
			counts:     Counts{Matched: 4, Ready: 4},
		},
		{
			name: "a pod still restarting from an earlier version is skipped, and does not count as unavailable",
			ss:   withVersion(ssV2, "sidecar:v3", "h3", "nh1"),
			pods: []*corev1.Pod{
				restartingPod("inflight"),
				restartingPod("inflight-unready", sidecarNotReady), // a not-ready container does not block (fixing a bad image)
				old("a"),
			},
			want: map[string]string{"inflight": "Upgrading/PreviousUpgradeInProgress", "inflight-unready": selected, "a": selected},
			// inflight-unready is free; a takes the one unit of budget (nothing updated is unavailable)
			upgrade:    []string{"inflight-unready", "a"},
			unbudgeted: []string{"inflight-unready"},
			counts:     Counts{Matched: 3, Ready: 1},
		},
		{
			name: "unmanaged pods are ignored",
			ss:   ssV2,
			pods: []*corev1.Pod{
				old("a"),
				old("gone", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }),
				old("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				old("foreign", func(p *corev1.Pod) { p.Annotations[sidecar.InjectedListAnnotation] = "other" }),
			},
			want:    map[string]string{"a": selected},
			upgrade: []string{"a"},
			counts:  Counts{Matched: 1, Ready: 1},
		},
		{
			name:        "an updated pod whose pod is not running is unavailable",
			ss:          ssV2,
			pods:        []*corev1.Pod{updatedPod("u", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }), old("a")},
			want:        map[string]string{"u": "Updated/NotReady", "a": overBudget},
			counts:      Counts{Matched: 2, Updated: 1, Ready: 1},
			unavailable: 1,
		},
		{
			name: "a pod upgraded while Pending holds no place: the ready pod of another namespace goes on",
			ss:   ssV2,
			pods: []*corev1.Pod{
				updatedPod("pending", unscheduled, upgradedNotReady),
				old("other", inNamespace("team-b")),
			},
			want:    map[string]string{"pending": "Upgrading/Restarting", "other": selected},
			upgrade: []string{"other"},
			counts:  Counts{Matched: 2, Updated: 1, Ready: 1},
		},
		{
			name: "a pod upgraded while not ready holds no place until it has been available",
			ss:   ssV2,
			pods: []*corev1.Pod{
				updatedPod("unready", notReady, upgradedNotReady),
				old("a"), old("b"),
			},
			want:    map[string]string{"unready": "Updated/NotReady", "a": selected, "b": overBudget},
			upgrade: []string{"a"},
			counts:  Counts{Matched: 3, Updated: 1, Ready: 2},
		},
		{
			name: "the mark alone exempts nothing: a pod upgraded while ready that is not ready holds its place",
			ss:   ssV2,
			pods: []*corev1.Pod{
				updatedPod("was-ready", notReady),
				old("a"),
			},
			want:        map[string]string{"was-ready": "Updated/NotReady", "a": overBudget},
			counts:      Counts{Matched: 2, Updated: 1, Ready: 1},
			unavailable: 1,
		},
		{
			name:        "a pod whose status lacks a container is not consistent",
			ss:          ssV2,
			pods:        []*corev1.Pod{updatedPod("u", func(p *corev1.Pod) { p.Status.ContainerStatuses = p.Status.ContainerStatuses[1:] })},
			want:        map[string]string{"u": restarting},
			counts:      Counts{Matched: 1, Updated: 1},
			unavailable: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := plan(tc.ss, tc.pods)
			if got := states(res); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("states:\n got %v\nwant %v", got, tc.want)
			}
			if got := names(res.Upgrade); !reflect.DeepEqual(got, tc.upgrade) && (len(got) > 0 || len(tc.upgrade) > 0) {
				t.Errorf("upgrade %v, want %v", got, tc.upgrade)
			}
			var unbudgeted []string
			for _, p := range res.Upgrade {
				if res.Unbudgeted[p] {
					unbudgeted = append(unbudgeted, p.Name)
				}
			}
			if !reflect.DeepEqual(unbudgeted, tc.unbudgeted) {
				t.Errorf("unbudgeted %v, want %v", unbudgeted, tc.unbudgeted)
			}
			if len(res.Unbudgeted) != len(unbudgeted) {
				t.Errorf("unbudgeted has %d pods, %d of them upgraded", len(res.Unbudgeted), len(unbudgeted))
			}
			if got := names(res.NotUpgradable); !reflect.DeepEqual(got, tc.notUpgrade) && (len(got) > 0 || len(tc.notUpgrade) > 0) {
				t.Errorf("not upgradable %v, want %v", got, tc.notUpgrade)
			}
			if res.Counts != tc.counts {
				t.Errorf("counts %+v, want %+v", res.Counts, tc.counts)
			}
			if res.Unavailable != tc.unavailable {
				t.Errorf("unavailable %d, want %d", res.Unavailable, tc.unavailable)
			}
			if len(res.Reset) > 0 {
				t.Errorf("reset %v, want none", names(res.Reset))
			}
			for _, pp := range res.Pods {
				if pp.Reason != "" && pp.Message == "" {
					t.Errorf("pod %s: reason %s without a message", pp.Pod.Name, pp.Reason)
				}
			}
		})
	}
}

func TestPlanMessagesAndRevision(t *testing.T) {
	ss := strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
		s.Partition, s.MaxUnavailable = intOrStr("1"), intOrStr("2")
	})
	res := plan(ss, []*corev1.Pod{old("a"), old("b"), old("c"), updatedPod("u"), updatedPod("f", waiting("CrashLoopBackOff"))})
	for name, want := range map[string]string{
		"a": "upgrading in this round",
		"b": "maxUnavailable is 2 and as many updated pods are unavailable",
		"c": "partition keeps 1 pod(s) on older revisions",
		"f": "container sidecar is waiting: CrashLoopBackOff",
	} {
		if got := planOf(res, name).Message; got != want {
			t.Errorf("pod %s: message %q, want %q", name, got, want)
		}
	}
	if got := planOf(res, "u").Revision; got != "ss-h2" {
		t.Errorf("revision of an updated pod %q, want ss-h2", got)
	}
	if got := planOf(res, "a").Revision; got != "ss-h1" {
		t.Errorf("revision of an old pod %q, want ss-h1", got)
	}
	if res.Partition != 1 || res.MaxUnavailable != 2 {
		t.Errorf("resolved partition %d, maxUnavailable %d; want 1, 2", res.Partition, res.MaxUnavailable)
	}
}

func TestPlanPodsOrder(t *testing.T) {
	// Pods that do not wait come first by namespace/name, then the candidates in upgrade order.
	ss := strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
		s.MaxUnavailable = intOrStr("2")
		s.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{OrderPriority: []v1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "idx"}}}
	})
	inNS := func(ns string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Namespace = ns } }
	pods := []*corev1.Pod{
		old("c1", labelled("idx", "1")), updatedPod("z", inNS("a")), old("c3", labelled("idx", "3")),
		updatedPod("m"), old("x", injectedFrom("h0", "nh0")), old("c2", labelled("idx", "2")),
	}
	res := plan(ss, pods)
	var got []string
	for _, pp := range res.Pods {
		got = append(got, pp.Pod.Namespace+"/"+pp.Pod.Name)
	}
	want := []string{"a/z", "default/m", "default/x", "default/c3", "default/c2", "default/c1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pods %v, want %v", got, want)
	}
	if got := names(res.Upgrade); !reflect.DeepEqual(got, []string{"c3", "c2"}) {
		t.Errorf("upgrade %v, want [c3 c2]", got)
	}
}

func TestPlanIsPure(t *testing.T) {
	pods := []*corev1.Pod{old("a"), restartingPod("b"), updatedPod("c"), old("d", notReady)}
	before := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		before[i] = p.DeepCopy()
	}
	ss := strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
		s.ScatterStrategy = v1alpha1.UpdateScatterStrategy{{Key: "app", Value: "*"}}
	})
	ssBefore := ss.DeepCopy()
	first := plan(ss, pods)
	second := plan(ss, pods)
	if !reflect.DeepEqual(states(first), states(second)) || !reflect.DeepEqual(names(first.Upgrade), names(second.Upgrade)) {
		t.Error("two plans of the same input differ")
	}
	for i := range pods {
		if !reflect.DeepEqual(pods[i], before[i]) {
			t.Errorf("Plan modified pod %s", pods[i].Name)
		}
	}
	if !reflect.DeepEqual(ss, ssBefore) {
		t.Error("Plan modified the SidecarSet")
	}
	if got := names(cached(pods)); !reflect.DeepEqual(got, []string{"a", "b", "c", "d"}) {
		t.Errorf("Plan reordered its input: %v", got)
	}
}

func TestPlanNoPods(t *testing.T) {
	res := plan(ssV2, nil)
	if res.Counts != (Counts{}) || len(res.Pods) != 0 || len(res.Upgrade) != 0 || !res.Done() {
		t.Errorf("plan of no pods: %+v", res)
	}
}

func TestDone(t *testing.T) {
	if res := plan(ssV2, []*corev1.Pod{updatedPod("a"), updatedPod("b")}); !res.Done() {
		t.Error("all updated and available: not done")
	}
	if res := plan(ssV2, []*corev1.Pod{updatedPod("a"), updatedPod("b", notReady)}); res.Done() {
		t.Error("an updated pod is unavailable: done")
	}
	if res := plan(ssV2, []*corev1.Pod{updatedPod("a"), old("b")}); res.Done() {
		t.Error("a pod is not updated: done")
	}
}

// TestWorkedExample plays §5.7's worked example: 10 ready pods, partition 30%, maxUnavailable
// 20%: two pods per round while the previous ones restart, 7 updated in the end.
func TestWorkedExample(t *testing.T) {
	ss := strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) {
		s.Partition, s.MaxUnavailable = intOrStr("30%"), intOrStr("20%")
	})
	var pods []*corev1.Pod
	for _, n := range podNames("p", 10) {
		pods = append(pods, old(n))
	}
	var rounds []string
	for round := 0; round < 20; round++ {
		res := plan(ss, pods)
		if res.Partition != 3 || res.MaxUnavailable != 2 {
			t.Fatalf("resolved partition %d, maxUnavailable %d; want 3, 2", res.Partition, res.MaxUnavailable)
		}
		rounds = append(rounds, fmt.Sprintf("%d+%d", res.Counts.Updated, len(res.Upgrade)))
		for _, p := range res.Upgrade {
			upgradePod(source(pods, p), ss, t0)
		}
		if len(res.Upgrade) == 0 && res.Unavailable == 0 {
			break
		}
		// Next round: nothing changed yet (the kubelet is slow), plan again.
		if again := plan(ss, pods); len(again.Upgrade) != 0 {
			t.Fatalf("round %d: %d more pods while %d restart", round, len(again.Upgrade), again.Unavailable)
		}
		for _, p := range res.Upgrade {
			restart(source(pods, p), "sidecar")
		}
	}
	if got, want := strings.Join(rounds, " "), "0+2 2+2 4+2 6+1 7+0"; got != want {
		t.Errorf("rounds (updated+upgraded) %s, want %s", got, want)
	}
	final := plan(ss, pods)
	if final.Counts.Updated != 7 || final.Counts.UpdatedReady != 7 {
		t.Errorf("final counts %+v, want 7 updated and ready", final.Counts)
	}
	for _, pp := range final.Pods {
		if pp.State == v1alpha1.PodRolloutWaiting && pp.Reason != ReasonPartition {
			t.Errorf("pod %s waits for %s, want Partition", pp.Pod.Name, pp.Reason)
		}
	}
}

// TestWorkedExampleStuckPod is the second half of the example: partition 0, maxUnavailable 2 and
// one updated pod stuck unready leave room for one more pod per round.
func TestWorkedExampleStuckPod(t *testing.T) {
	ss := strategy(func(s *v1alpha1.SidecarSetUpdateStrategy) { s.MaxUnavailable = intOrStr("20%") })
	pods := []*corev1.Pod{updatedPod("stuck", notReady)}
	for _, n := range podNames("p", 9) {
		pods = append(pods, old(n))
	}
	for round := 0; round < 9; round++ {
		res := plan(ss, pods)
		if len(res.Upgrade) != 1 {
			t.Fatalf("round %d: %d upgrades, want 1 (%s)", round, len(res.Upgrade), stateOf(res))
		}
		upgradePod(source(pods, res.Upgrade[0]), ss, t0)
		if again := plan(ss, pods); len(again.Upgrade) != 0 {
			t.Fatalf("round %d: upgrades %v while at the budget", round, names(again.Upgrade))
		}
		restart(source(pods, res.Upgrade[0]), "sidecar")
	}
	if res := plan(ss, pods); res.Counts.Updated != 10 || res.Unavailable != 1 {
		t.Errorf("final counts %+v, unavailable %d", res.Counts, res.Unavailable)
	}
}

func TestPlanNativeSidecar(t *testing.T) {
	v1 := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Spec.InitContainers = []v1alpha1.SidecarContainer{
			nativeSidecar("agent", "agent:v1"),
			{Container: corev1.Container{Name: "init", Image: "init:v1"}}, // plain init: injection only
		}
	})
	v2 := v1.DeepCopy()
	v2.Spec.InitContainers[0].Image = "agent:v2"
	v2.Annotations[sidecar.HashAnnotation] = "h2"
	pods := []*corev1.Pod{newPod("a", v1), newPod("b", v1)}
	res := plan(v2, pods)
	if got := names(res.Upgrade); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("upgrade %v, want [a]", got)
	}
	if changed := upgradePod(pods[0], v2, t0); !reflect.DeepEqual(changed, []string{"agent"}) {
		t.Fatalf("changed %v, want [agent]", changed)
	}
	res = plan(v2, pods)
	if got := planOf(res, "a"); got.State != v1alpha1.PodRolloutUpgrading || got.Reason != ReasonRestarting {
		t.Errorf("pod a: %s/%s, want Upgrading/Restarting (native sidecar restarting)", got.State, got.Reason)
	}
	if len(res.Upgrade) != 0 || res.Unavailable != 1 {
		t.Errorf("upgrade %v, unavailable %d while the native sidecar restarts", names(res.Upgrade), res.Unavailable)
	}
	// Once a new version comes while the native sidecar is still running the old one (ready), the
	// pod is in flight.
	v3 := v2.DeepCopy()
	v3.Spec.InitContainers[0].Image = "agent:v3"
	v3.Annotations[sidecar.HashAnnotation] = "h3"
	if got := planOf(plan(v3, pods), "a"); got.Reason != ReasonPreviousUpgrade {
		t.Errorf("pod a under v3: %s/%s, want PreviousUpgradeInProgress", got.State, got.Reason)
	}
	restart(pods[0], "agent")
	res = plan(v2, pods)
	if got := planOf(res, "a"); got.State != v1alpha1.PodRolloutUpdated {
		t.Errorf("pod a: %s/%s after the restart, want Updated", got.State, got.Reason)
	}
	if got := names(res.Upgrade); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("upgrade %v, want [b]", got)
	}
	// A failing native sidecar fails the pod's rollout.
	upgradePod(pods[1], v2, t0)
	st := &pods[1].Status.InitContainerStatuses[0]
	st.Ready, st.State = false, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}
	if got := planOf(plan(v2, pods), "b"); got.State != v1alpha1.PodRolloutFailed || got.Reason != "ErrImagePull" {
		t.Errorf("pod b: %s/%s, want Failed/ErrImagePull", got.State, got.Reason)
	}
}

// hotSet returns SidecarSet versions with a cold sidecar and a hot-upgrade one, proxy.
func hotSet(image, hash string) *v1alpha1.SidecarSet {
	return newSidecarSet("sidecar:v1", hash, "nh1", func(ss *v1alpha1.SidecarSet) {
		ss.Spec.Containers = append(ss.Spec.Containers, hotSidecar("proxy", image))
	})
}

func TestPlanHotUpgrade(t *testing.T) {
	v1, v2 := hotSet("proxy:v1", "h1"), hotSet("proxy:v2", "h2")
	pods := []*corev1.Pod{newPod("a", v1), newPod("b", v1)}
	a := pods[0]

	res := plan(v2, pods)
	if got := names(res.Upgrade); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("upgrade %v, want [a]", got)
	}
	if changed := upgradePod(a, v2, t0); !reflect.DeepEqual(changed, []string{"proxy-2"}) {
		t.Fatalf("changed %v, want [proxy-2] (the empty twin)", changed)
	}

	// proxy-2 restarts on proxy:v2; proxy-1 (now idle) still runs proxy:v1.
	res = plan(v2, pods)
	if got := planOf(res, "a"); got.State != v1alpha1.PodRolloutUpgrading || got.Reason != ReasonRestarting {
		t.Errorf("a: %s/%s, want Upgrading/Restarting", got.State, got.Reason)
	}
	if len(res.Reset) != 0 || len(res.Upgrade) != 0 {
		t.Errorf("reset %v, upgrade %v while proxy-2 restarts", names(res.Reset), names(res.Upgrade))
	}
	restart(a, "proxy-2")

	// The new twin serves: the idle one must go back to the empty image before anything else.
	res = plan(v2, pods)
	if got := planOf(res, "a"); got.State != v1alpha1.PodRolloutUpgrading || got.Reason != ReasonHotUpgradeReset {
		t.Errorf("a: %s/%s, want Upgrading/HotUpgradeReset", got.State, got.Reason)
	}
	if got := names(res.Reset); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("reset %v, want [a]", got)
	}
	if len(res.Upgrade) != 0 {
		t.Errorf("upgrade %v while a reset is due", names(res.Upgrade))
	}
	if got := planOf(res, "b"); got.State != v1alpha1.PodRolloutWaiting || got.Reason != ReasonHotUpgradeReset {
		t.Errorf("b: %s/%s, want Waiting/HotUpgradeReset", got.State, got.Reason)
	}
	if res.Unavailable != 1 || res.Counts.Ready != 1 {
		t.Errorf("unavailable %d, counts %+v: a pod whose idle twin runs a real image is not ready for the sidecar", res.Unavailable, res.Counts)
	}
	// Paused: no reset either.
	paused := v2.DeepCopy()
	paused.Spec.UpdateStrategy.Paused = true
	if res := plan(paused, pods); len(res.Reset) != 0 || len(res.Upgrade) != 0 {
		t.Errorf("paused: reset %v, upgrade %v", names(res.Reset), names(res.Upgrade))
	}

	if got := resetPod(a, v2, t0); !reflect.DeepEqual(got, []string{"proxy-1"}) {
		t.Fatalf("reset %v, want [proxy-1]", got)
	}
	// proxy-1 restarts on the empty image; until then the pod is inconsistent.
	res = plan(v2, pods)
	if got := planOf(res, "a"); got.State != v1alpha1.PodRolloutUpgrading || got.Reason != ReasonRestarting {
		t.Errorf("a: %s/%s after the reset, want Upgrading/Restarting", got.State, got.Reason)
	}
	if len(res.Reset) != 0 || len(res.Upgrade) != 0 {
		t.Errorf("reset %v, upgrade %v while proxy-1 restarts", names(res.Reset), names(res.Upgrade))
	}
	restart(a, "proxy-1")
	res = plan(v2, pods)
	if got := planOf(res, "a"); got.State != v1alpha1.PodRolloutUpdated || got.Reason != "" {
		t.Errorf("a: %s/%s, want Updated", got.State, got.Reason)
	}
	if got := names(res.Upgrade); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("upgrade %v, want [b]", got)
	}

	// Next version: the empty twin (now proxy-1) gets it.
	v3 := hotSet("proxy:v3", "h3")
	if changed := upgradePod(a, v3, t0); !reflect.DeepEqual(changed, []string{"proxy-1"}) {
		t.Errorf("changed %v, want [proxy-1]", changed)
	}
}

func TestPlanHotUpgradeResetConditions(t *testing.T) {
	v1, v2 := hotSet("proxy:v1", "h1"), hotSet("proxy:v2", "h2")
	// upgradedHot returns a pod whose proxy-2 runs v2 and whose idle proxy-1 still runs v1.
	upgradedHot := func(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
		p := newPod(name, v1)
		upgradePod(p, v2, t0)
		restart(p, "proxy-2")
		for _, o := range opts {
			o(p)
		}
		return p
	}
	unready := func(c string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { statusOf(p, c).Ready = false; notReady(p) }
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		due  bool
	}{
		{"settled and ready", upgradedHot("p"), true},
		{"pod not ready, only the idle twin not ready", upgradedHot("p", unready("proxy-1")), true},
		{"pod not ready, the working twin not ready", upgradedHot("p", unready("proxy-2")), false},
		{"pod not ready, an app container not ready", upgradedHot("p", unready("app")), false},
		{"cold sidecar still restarting", upgradedHot("p", func(p *corev1.Pod) {
			p.Spec.Containers[1].Image = "sidecar:v9"
			sidecar.RecordInPlaceUpdate(p.Annotations, ssName, "h2", t0, []string{"sidecar"},
				map[string]sidecar.InPlaceUpdateContainerStatus{"sidecar": sidecar.StatusBefore(p, "sidecar")})
			p.Generation++
		}), false},
		{"status lacks a container", upgradedHot("p", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = p.Status.ContainerStatuses[:len(p.Status.ContainerStatuses)-1]
		}), false},
		{"idle twin already empty", newPod("p", v2), false},
		{"old pod, idle twin empty", newPod("p", v1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := plan(v2, []*corev1.Pod{tc.pod})
			if due := len(res.Reset) == 1; due != tc.due {
				t.Errorf("reset due = %v, want %v (%s)", due, tc.due, stateOf(res))
			}
			if tc.due && len(res.Upgrade) != 0 {
				t.Errorf("upgrade %v while a reset is due", names(res.Upgrade))
			}
		})
	}
}

func TestPlanHotUpgradeEmptyImageUnset(t *testing.T) {
	// Without hotUpgradeEmptyImage the idle-twin rules are off (OpenKruise skips the check).
	ss := newSidecarSet("sidecar:v1", "h1", "nh1", func(ss *v1alpha1.SidecarSet) {
		c := hotSidecar("proxy", "proxy:v1")
		c.UpgradeStrategy.HotUpgradeEmptyImage = ""
		ss.Spec.Containers = append(ss.Spec.Containers, c)
	})
	pod := newPod("p", ss)
	res := plan(ss, []*corev1.Pod{pod})
	if res.Counts.Ready != 1 || len(res.Reset) != 0 {
		t.Errorf("counts %+v, reset %v", res.Counts, names(res.Reset))
	}
}

// TestPlanDeferred: a pod whose last upgrade kube-apiserver refused, within its backoff, waits
// (RetryBackoff) without taking the budget (1): the next pod in order is upgraded.
func TestPlanDeferred(t *testing.T) {
	pods := cached([]*corev1.Pod{old("a"), old("b")})
	res := PlanWith(ssV2, pods, Options{Deferred: map[types.UID]bool{"uid-a": true}})
	want := map[string]string{"a": "Waiting/" + ReasonRetryBackoff, "b": selected}
	if got := states(res); !reflect.DeepEqual(got, want) {
		t.Errorf("states %v, want %v", got, want)
	}
	if got := names(res.Upgrade); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("upgrade %v, want [b]", got)
	}
}
