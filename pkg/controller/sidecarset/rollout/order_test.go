package rollout

import (
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestActiveLess(t *testing.T) {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	base := func(name string, opts ...func(*corev1.Pod)) *corev1.Pod { return newPod(name, ss, opts...) }
	unscheduled := func(p *corev1.Pod) { p.Spec.NodeName = "" }
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	restarts := func(n int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.ContainerStatuses[len(p.Status.ContainerStatuses)-1].RestartCount = n }
	}
	noCreation := func(p *corev1.Pod) { p.CreationTimestamp = metav1.Time{} }
	readyZero := readySince(time.Time{})

	for _, tc := range []struct {
		name         string
		first, later *corev1.Pod
	}{
		{"unscheduled before scheduled", base("b", unscheduled), base("a")},
		{"unscheduled before scheduled, whatever the phase", base("b", unscheduled, phase(corev1.PodRunning)), base("a", phase(corev1.PodPending))},
		{"pending before running", base("b", phase(corev1.PodPending)), base("a")},
		{"pending before unknown", base("b", phase(corev1.PodPending)), base("a", phase(corev1.PodUnknown))},
		{"unknown before running", base("b", phase(corev1.PodUnknown)), base("a")},
		{"an unlisted phase ranks with pending", base("b", phase("Odd")), base("a", phase(corev1.PodUnknown))},
		{"not ready before ready", base("b", notReady), base("a")},
		{"not ready before ready despite more restarts of the ready one", base("b", notReady), base("a", restarts(5))},
		{"ready more recently before ready longer", base("b", readySince(t0.Add(time.Hour))), base("a", readySince(t0))},
		{"ready at an unknown time before ready at a known time", base("b", readyZero), base("a", readySince(t0))},
		{"more restarts before fewer", base("b", restarts(3)), base("a", restarts(1))},
		{"restarts compare among not-ready pods", base("b", notReady, restarts(3)), base("a", notReady, readySince(t0.Add(time.Hour)), notReady)},
		{"newer before older", base("b", createdAt(t0.Add(time.Minute))), base("a", createdAt(t0))},
		{"unset creation before set", base("b", noCreation), base("a", createdAt(t0.Add(time.Hour)))},
		{"ties by name", base("a"), base("b")},
		{"ties by namespace first", base("z", func(p *corev1.Pod) { p.Namespace = "a" }), base("a")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !activeLess(NewPod(tc.first), NewPod(tc.later)) {
				t.Errorf("activeLess(%s, %s) = false, want true", tc.first.Name, tc.later.Name)
			}
			if activeLess(NewPod(tc.later), NewPod(tc.first)) {
				t.Errorf("activeLess(%s, %s) = true, want false", tc.later.Name, tc.first.Name)
			}
		})
	}
	if p := base("a"); activeLess(NewPod(p), NewPod(p)) {
		t.Error("activeLess(NewPod(p), NewPod(p)) = true")
	}
}

func TestActiveOrderIsTotal(t *testing.T) {
	// Sorting any permutation of the same pods gives the same order.
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	rng := rand.New(rand.NewSource(1))
	var pods []*corev1.Pod
	for i := range 60 {
		pods = append(pods, newPod(fmt.Sprintf("p%02d", i), ss, func(p *corev1.Pod) {
			if rng.Intn(4) == 0 {
				notReady(p)
			} else {
				readySince(t0.Add(time.Duration(rng.Intn(3)) * time.Minute))(p)
			}
			p.Status.ContainerStatuses[0].RestartCount = int32(rng.Intn(2))
			p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(rng.Intn(3)) * time.Hour))
			if rng.Intn(10) == 0 {
				p.Status.Phase = corev1.PodPending
			}
		}))
	}
	var want []string
	for n := range 5 {
		idx := rng.Perm(len(pods))
		got := sortCandidates(&v1alpha1.SidecarSetUpdateStrategy{}, cached(pods), idx)
		var order []string
		for _, i := range got {
			order = append(order, pods[i].Name)
		}
		if n == 0 {
			want = order
		} else if !reflect.DeepEqual(order, want) {
			t.Fatalf("order depends on the input order:\n%v\n%v", want, order)
		}
	}
}

func TestIntSuffix(t *testing.T) {
	for in, want := range map[string]int64{
		"":                          0,
		"sts":                       0,
		"sts-":                      0,
		"sts-0":                     0,
		"sts-9":                     9,
		"sts-10":                    10,
		"10":                        10,
		"a1b22":                     22,
		"v-007":                     7,
		"x-9223372036854775807":     9223372036854775807, // math.MaxInt64 parses
		"x-9223372036854775800":     9223372036854775800,
		"x-9223372036854775808":     0, // out of range: strconv.ParseInt fails, OpenKruise uses 0
		"x-99999999999999999999":    0,
		"x-00000000000000000000001": 1,
	} {
		if got := intSuffix(in); got != want {
			t.Errorf("intSuffix(%q) = %d, want %d", in, got, want)
		}
	}
}

// candidateOrder sorts pods (all candidates, given in this order) with st and returns their names.
func candidateOrder(st *v1alpha1.SidecarSetUpdateStrategy, pods []*corev1.Pod) []string {
	idx := make([]int, len(pods))
	for i := range idx {
		idx[i] = i
	}
	var out []string
	for _, i := range sortCandidates(st, cached(pods), idx) {
		out = append(out, pods[i].Name)
	}
	return out
}

func TestPriorityOrder(t *testing.T) {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	// Pods are named so that the active order (all equal but the name) is alphabetical.
	pod := func(name string, kv ...string) *corev1.Pod { return newPod(name, ss, labelled(kv...)) }
	weight := func(w int32, kv ...string) v1alpha1.UpdatePriorityWeightTerm {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return v1alpha1.UpdatePriorityWeightTerm{Weight: w, MatchSelector: metav1.LabelSelector{MatchLabels: m}}
	}
	order := func(keys ...string) *v1alpha1.UpdatePriorityStrategy {
		p := &v1alpha1.UpdatePriorityStrategy{}
		for _, k := range keys {
			p.OrderPriority = append(p.OrderPriority, v1alpha1.UpdatePriorityOrderTerm{OrderedKey: k})
		}
		return p
	}

	for _, tc := range []struct {
		name     string
		priority *v1alpha1.UpdatePriorityStrategy
		pods     []*corev1.Pod
		want     []string
	}{
		{
			name:     "no terms keeps the active order",
			priority: &v1alpha1.UpdatePriorityStrategy{},
			pods:     []*corev1.Pod{pod("a", "k", "1"), pod("b", "k", "2")},
			want:     []string{"a", "b"},
		},
		{
			name: "weight: higher first, ties in active order",
			priority: &v1alpha1.UpdatePriorityStrategy{WeightPriority: []v1alpha1.UpdatePriorityWeightTerm{
				weight(50, "tier", "canary"), weight(10, "tier", "edge"),
			}},
			pods: []*corev1.Pod{pod("a"), pod("b", "tier", "edge"), pod("c", "tier", "canary"), pod("d", "tier", "edge"), pod("e")},
			want: []string{"c", "b", "d", "a", "e"},
		},
		{
			name: "weight: weights of matching terms add up",
			priority: &v1alpha1.UpdatePriorityStrategy{WeightPriority: []v1alpha1.UpdatePriorityWeightTerm{
				weight(30, "a", "1"), weight(20, "b", "1"), weight(40, "c", "1"),
			}},
			pods: []*corev1.Pod{pod("p1", "a", "1"), pod("p2", "a", "1", "b", "1"), pod("p3", "c", "1"), pod("p4", "b", "1")},
			want: []string{"p2", "p3", "p1", "p4"}, // 50, 40, 30, 20
		},
		{
			name: "weight: an invalid selector matches nothing",
			priority: &v1alpha1.UpdatePriorityStrategy{WeightPriority: []v1alpha1.UpdatePriorityWeightTerm{
				{Weight: 90, MatchSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}},
				weight(10, "b", "1"),
			}},
			pods: []*corev1.Pod{pod("p1", "a", "1"), pod("p2", "b", "1")},
			want: []string{"p2", "p1"},
		},
		{
			name: "weight wins over order when both are set",
			priority: &v1alpha1.UpdatePriorityStrategy{
				WeightPriority: []v1alpha1.UpdatePriorityWeightTerm{weight(10, "w", "1")},
				OrderPriority:  []v1alpha1.UpdatePriorityOrderTerm{{OrderedKey: "idx"}},
			},
			pods: []*corev1.Pod{pod("a", "idx", "9"), pod("b", "w", "1", "idx", "1")},
			want: []string{"b", "a"},
		},
		{
			name:     "order: higher suffix first, sts-10 before sts-9",
			priority: order("sts"),
			pods:     []*corev1.Pod{pod("a", "sts", "web-9"), pod("b", "sts", "web-10"), pod("c", "sts", "web-2"), pod("d", "sts", "web-100")},
			want:     []string{"d", "b", "a", "c"},
		},
		{
			name:     "order: pods with none of the keys come first (level -1)",
			priority: order("sts"),
			pods:     []*corev1.Pod{pod("a", "sts", "web-9"), pod("b"), pod("c", "sts", "web-10"), pod("d")},
			want:     []string{"b", "d", "c", "a"},
		},
		{
			name:     "order: first key of the terms decides the level",
			priority: order("first", "second"),
			pods: []*corev1.Pod{
				pod("a", "second", "s-50"), pod("b", "first", "f-1"), pod("c", "second", "s-60"),
				pod("d", "first", "f-2", "second", "s-99"), pod("e"),
			},
			want: []string{"e", "d", "b", "c", "a"},
		},
		{
			name:     "order: a value without digits is 0",
			priority: order("sts"),
			pods:     []*corev1.Pod{pod("a", "sts", "web"), pod("b", "sts", "web-0"), pod("c", "sts", "web-1")},
			want:     []string{"c", "a", "b"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.SidecarSetUpdateStrategy{PriorityStrategy: tc.priority}
			if got := candidateOrder(st, tc.pods); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("order = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPriorityAfterActiveOrder(t *testing.T) {
	// Priority re-sorts stably: among pods of the same weight, not-ready pods still come first.
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	pods := []*corev1.Pod{
		newPod("a", ss, labelled("w", "1")),
		newPod("b", ss, labelled("w", "1"), notReady),
		newPod("c", ss),
		newPod("d", ss, notReady),
	}
	st := &v1alpha1.SidecarSetUpdateStrategy{PriorityStrategy: &v1alpha1.UpdatePriorityStrategy{
		WeightPriority: []v1alpha1.UpdatePriorityWeightTerm{{Weight: 5, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"w": "1"}}}},
	}}
	if got, want := candidateOrder(st, pods), []string{"b", "a", "d", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

// scatterPods builds pods "0", "1", ... from "k=v,k2=v2" label specs (OpenKruise's test format).
func scatterPods(specs []string) []*corev1.Pod {
	ss := newSidecarSet("sidecar:v1", "h1", "nh1")
	var pods []*corev1.Pod
	for i, spec := range specs {
		p := newPod(fmt.Sprint(i), ss)
		p.Labels = map[string]string{}
		for _, kv := range strings.Split(spec, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				p.Labels[k] = v
			}
		}
		pods = append(pods, p)
	}
	return pods
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestScatterByTermGolden ports OpenKruise's TestScatterPodsByRule
// (pkg/util/updatesort/scatter_sort_test.go, v1.9.1): one term, every pod a candidate.
func TestScatterByTermGolden(t *testing.T) {
	term := v1alpha1.UpdateScatterTerm{Key: "labelA", Value: "AAA"}
	for _, tc := range []struct {
		desc   string
		labels []string
		want   []int
	}{
		{"no label", []string{""}, []int{0}},
		{"only one scattered pod", []string{"labelA=AAA"}, []int{0}},
		{"odd scattered pod + odd ordinary pod", []string{"labelA=AAA", "bbb"}, []int{0, 1}},
		{"even scattered pods + even ordinary pods", []string{"", "", "", "", "labelA=AAA", "labelA=AAA"}, []int{4, 0, 1, 2, 3, 5}},
		{"odd scattered pods + odd ordinary pods", []string{"", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"}, []int{3, 0, 1, 4, 2, 5}},
		{"even scattered pods + odd ordinary pods", []string{"", "", "", "labelA=AAA", "", "", "labelA=AAA"}, []int{3, 0, 1, 2, 4, 5, 6}},
		{"odd scattered pods + even ordinary pods", []string{"", "", "", "", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"}, []int{6, 0, 1, 2, 7, 3, 4, 5, 8}},
		{"even scattered + even ordinary, scattered more", []string{"", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"}, []int{2, 3, 0, 4, 1, 5}},
		{"odd scattered + odd ordinary, scattered more", []string{"", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"}, []int{3, 0, 1, 4, 2, 5}},
		{"even scattered + odd ordinary, scattered more", []string{"", "", "labelA=AAA", "", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA", "labelA=AAA"}, []int{2, 4, 0, 5, 6, 1, 7, 3, 8}},
		{"odd scattered + even ordinary, scattered more", []string{"", "labelA=AAA", "", "labelA=AAA", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"}, []int{1, 0, 3, 2, 6, 4, 7, 5, 8}},
		{"invalid label", []string{"", "", "", "", "ee", "a", "", "labelA=AAA", "labelA=AAA", "labelA=AAA,labelB=BBB"}, []int{7, 0, 1, 2, 3, 8, 4, 5, 6, 9}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pods := scatterPods(tc.labels)
			if got := scatterByTerm(term, cached(pods), indexes(len(pods))); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("scatterByTerm = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestScatterGolden ports OpenKruise's TestSort: the first len(want) pods are candidates, the
// others count only in the densities.
func TestScatterGolden(t *testing.T) {
	A, B, C := v1alpha1.UpdateScatterTerm{Key: "labelA", Value: "AAA"}, v1alpha1.UpdateScatterTerm{Key: "labelB", Value: "BBB"}, v1alpha1.UpdateScatterTerm{Key: "labelC", Value: "CCC"}
	for _, tc := range []struct {
		desc   string
		labels []string
		terms  []v1alpha1.UpdateScatterTerm
		want   []int
	}{
		{"a scattered pod", []string{"labelA=AAA,labelB=BBB"}, []v1alpha1.UpdateScatterTerm{A}, []int{0}},
		{"all ordinary pods", []string{"", "", "", "", "", ""}, nil, []int{0, 1, 2, 3, 4, 5}},
		{"one pod one label", []string{"", "", "", "", "labelA=AAA", "labelA=AAA"}, []v1alpha1.UpdateScatterTerm{A}, []int{4, 0, 1, 2, 3, 5}},
		{"one pod more labels", []string{"", "", "", "", "sdfb=eee", "dsf=same", "labelB=BBB", "labelA=AAA", "labelA=AAA", "labelA=AAA,labelB=BBB"},
			[]v1alpha1.UpdateScatterTerm{B}, []int{6, 0, 1, 2, 3, 4, 5, 7, 8, 9}},
		{"2 dimensions + one pod one label", []string{"labelB=BBB", "labelB=BBB", "", "", "labelA=AAA", "labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{0, 4, 2, 3, 5, 1}},
		{"2 dimensions + one pod more labels", []string{"", "", "", "labelB=BBB", "labelA=AAA,labelB=BBB", "labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{4, 0, 1, 2, 5, 3}},
		{"2 dimensions + same label + sequence: A + B", []string{"", "", "", "", "sdfb=eee", "dsf=same", "labelB=BBB", "labelA=AAA", "labelA=AAA", "labelB=BBB"},
			[]v1alpha1.UpdateScatterTerm{B, A}, []int{7, 6, 0, 1, 2, 3, 4, 5, 9, 8}},
		{"2 dimensions + same label + sequence: B + A", []string{"", "", "", "", "sdfb=eee", "dsf=same", "labelB=BBB", "labelA=AAA", "labelA=AAA", "labelB=BBB"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{6, 7, 0, 1, 2, 3, 4, 5, 8, 9}},
		{"same pod same label, even + even", []string{"", "", "", "", "sdfb=eee", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{6, 0, 1, 2, 3, 4, 5, 7, 8, 9}},
		{"same pod same label, even + odd", []string{"", "", "", "sdfb=eee", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{5, 0, 1, 2, 3, 4, 6, 7, 8}},
		{"same pod same label, odd + odd, partial candidates", []string{"", "", "", "labelA=AAA", "sdfb=eee", "dsf=same", "labelA=AAA,labelB=BBB", "", "", ""},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{3, 0, 1, 2, 4, 5, 7, 6}},
		{"same pod same label, odd + odd, more pods", []string{"", "", "", "labelA=AAA", "", "", "sdfb=eee", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{0, 1, 2, 4, 3, 5, 6, 7, 9, 10, 8}},
		{"same pod same label, scatter pods more than ordinary", []string{"", "", "", "labelA=AAA", "sdfb=eee,labelA=AAA", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{6, 3, 0, 1, 4, 2, 5, 7, 8, 9}},
		{"same pod same label, even + odd, scatter pods more", []string{"", "labelA=AAA", "labelA=AAA", "sdfb=eee", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{5, 1, 0, 3, 2, 4, 6, 7, 8}},
		{"same pod same label, odd + odd, scatter pods more, partial", []string{"labelA=AAA", "", "", "labelA=AAA", "sdfb=eee,labelA=AAA", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{1, 0, 2, 3, 5, 4, 7, 6}},
		{"same pod same label, odd + odd, scatter pods more, partial 2", []string{"", "", "labelA=AAA", "labelA=AAA", "", "labelA=AAA", "sdfb=eee", "dsf=same", "labelA=AAA,labelB=BBB", "", "", "labelB=BBB,labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A, B}, []int{0, 2, 1, 4, 3, 6, 7, 5, 9, 10, 8}},
		{"3 dimensions + one pod one label", []string{"", "labelA=AAA", "labelA=AAA", "labelB=BBB", "labelB=BBB", "labelC=CCC", "labelC=CCC", "labelC=CCC", "labelC=CCC", "labelC=CCC"},
			[]v1alpha1.UpdateScatterTerm{A, B, C}, []int{3, 1, 5, 0, 6, 7, 8, 9, 2, 4}},
		{"3 dimensions + one pod more label", []string{"", "labelA=AAA", "labelA=AAA,labelC=CCC", "labelB=BBB,labelC=CCC", "labelB=BBB", "", "", "labelC=CCC", "labelC=CCC", "labelC=CCC"},
			[]v1alpha1.UpdateScatterTerm{A, B, C}, []int{3, 2, 0, 7, 8, 5, 6, 9, 1, 4}},
		{"continuous sort 1", []string{"", "", "", "", "labelA=AAA", "labelA=AAA", "labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A}, []int{0, 1, 4, 2, 3, 5}},
		{"continuous sort 2", []string{"labelA=AAA", "labelA=AAA", "", "", "", "", "", "", "", "labelA=AAA"},
			[]v1alpha1.UpdateScatterTerm{A}, []int{2, 0, 3, 4, 5, 6, 1}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pods := scatterPods(tc.labels)
			if got := scatter(tc.terms, cached(pods), indexes(len(tc.want))); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("scatter = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpandScatterTerms(t *testing.T) {
	pods := scatterPods([]string{"zone=b", "zone=a", "zone=b,rack=r1", "rack=r2", "zone=c", ""})
	terms := v1alpha1.UpdateScatterStrategy{
		{Key: "rack", Value: "r1"}, {Key: "zone", Value: "*"}, {Key: "zone", Value: "b"}, {Key: "rack", Value: "r1"}, {Key: "none", Value: "*"},
	}
	want := []v1alpha1.UpdateScatterTerm{{Key: "rack", Value: "r1"}, {Key: "zone", Value: "a"}, {Key: "zone", Value: "b"}, {Key: "zone", Value: "c"}}
	if got := expandScatterTerms(terms, cached(pods)); !reflect.DeepEqual(got, want) {
		t.Errorf("expandScatterTerms = %v, want %v", got, want)
	}
}

func TestScatterSpreadsZones(t *testing.T) {
	// 60 pods, zone z0 holding half of them, sorted by name in the active order: the scatter order
	// interleaves z0 pods with the others instead of upgrading z0 first.
	var specs []string
	for i := range 60 {
		if i < 30 {
			specs = append(specs, "zone=z0")
		} else {
			specs = append(specs, fmt.Sprintf("zone=z%d", 1+i%2))
		}
	}
	pods := scatterPods(specs)
	for i, p := range pods {
		p.Name = fmt.Sprintf("p%02d", i) // active order = index order
	}
	st := &v1alpha1.SidecarSetUpdateStrategy{ScatterStrategy: v1alpha1.UpdateScatterStrategy{{Key: "zone", Value: "z0"}}}
	order := sortCandidates(st, cached(pods), indexes(len(pods)))
	if got := len(order); got != 60 {
		t.Fatalf("order has %d pods", got)
	}
	seen := map[int]bool{}
	for _, i := range order {
		if seen[i] {
			t.Fatalf("pod %d twice in %v", i, order)
		}
		seen[i] = true
	}
	// In every window of 10 consecutive pods of the first 50, z0 has between 3 and 7 pods.
	for start := 0; start+10 <= 50; start++ {
		n := 0
		for _, i := range order[start : start+10] {
			if pods[i].Labels["zone"] == "z0" {
				n++
			}
		}
		if n < 3 || n > 7 {
			t.Errorf("window %d..%d holds %d z0 pods: %v", start, start+10, n, order)
		}
	}
}

func TestScatterKeepsCandidates(t *testing.T) {
	// Whatever the terms, scatter returns a permutation of the candidates.
	rng := rand.New(rand.NewSource(7))
	for round := range 200 {
		n := 1 + rng.Intn(40)
		var specs []string
		for range n {
			var kv []string
			for _, k := range []string{"a", "b", "c"} {
				if rng.Intn(2) == 0 {
					kv = append(kv, fmt.Sprintf("%s=%d", k, rng.Intn(3)))
				}
			}
			specs = append(specs, strings.Join(kv, ","))
		}
		pods := scatterPods(specs)
		var cands []int
		for i := range pods {
			if rng.Intn(3) > 0 {
				cands = append(cands, i)
			}
		}
		terms := expandScatterTerms(v1alpha1.UpdateScatterStrategy{{Key: "a", Value: "*"}, {Key: "b", Value: "1"}, {Key: "c", Value: "*"}}, cached(pods))
		got := scatter(terms, cached(pods), append([]int(nil), cands...))
		sorted := append([]int(nil), got...)
		sort.Ints(sorted)
		if !reflect.DeepEqual(sorted, cands) && !(len(sorted) == 0 && len(cands) == 0) {
			t.Fatalf("round %d: scatter(%v) = %v, not a permutation", round, cands, got)
		}
	}
}
