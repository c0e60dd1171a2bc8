package rollout

import (
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// This file orders upgrade candidates as OpenKruise does (§5.7 steps 2-4): the Kubernetes
// "active pods" order, then priorityStrategy, then scatterStrategy. Ties are broken by
// namespace/name so that a plan is a function of its inputs.

// sortCandidates returns the candidates (indexes into pods) in upgrade order.
func sortCandidates(st *v1alpha1.SidecarSetUpdateStrategy, pods []*Pod, candidates []int) []int {
	sort.SliceStable(candidates, func(i, j int) bool {
		return activeLess(pods[candidates[i]], pods[candidates[j]])
	})
	if p := st.PriorityStrategy; p != nil && (len(p.WeightPriority) > 0 || len(p.OrderPriority) > 0) {
		sortByPriority(p, pods, candidates)
	}
	if len(st.ScatterStrategy) > 0 {
		candidates = scatter(expandScatterTerms(st.ScatterStrategy, pods), pods, candidates)
	}
	return candidates
}

var phaseOrdinal = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// activeLess is Kubernetes' ActivePods order: unscheduled < scheduled; Pending < Unknown <
// Running; not ready < ready; ready more recently < ready longer; more restarts < fewer; newer or
// unset creation < older.
func activeLess(a, b *Pod) bool {
	if a.Scheduled != b.Scheduled {
		return !a.Scheduled
	}
	if pa, pb := phaseOrdinal[a.Phase], phaseOrdinal[b.Phase]; pa != pb {
		return pa < pb
	}
	if a.Ready != b.Ready {
		return !a.Ready
	}
	if a.Ready && !a.ReadySince.Equal(b.ReadySince) {
		return afterOrZero(a.ReadySince, b.ReadySince)
	}
	if ca, cb := maxRestarts(a), maxRestarts(b); ca != cb {
		return ca > cb
	}
	if !a.Created.Equal(b.Created) {
		return afterOrZero(a.Created, b.Created)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// afterOrZero orders a zero time first, then later times first.
func afterOrZero(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero()
	}
	return a.After(b)
}

func maxRestarts(p *Pod) int32 {
	var n int32
	for i := range p.Containers {
		if c := &p.Containers[i]; !c.Init {
			n = max(n, c.RestartCount)
		}
	}
	return n
}

func sortByPriority(p *v1alpha1.UpdatePriorityStrategy, pods []*Pod, candidates []int) {
	type prio struct{ a, b int64 }
	keys := make(map[int]prio, len(candidates))
	if len(p.WeightPriority) > 0 {
		selectors := make([]labels.Selector, len(p.WeightPriority))
		for i := range p.WeightPriority {
			s, err := metav1.LabelSelectorAsSelector(&p.WeightPriority[i].MatchSelector)
			if err != nil {
				s = labels.Nothing()
			}
			selectors[i] = s
		}
		for _, c := range candidates {
			var w int64
			for i, s := range selectors {
				if s.Matches(pods[c].Labels) {
					w += int64(p.WeightPriority[i].Weight)
				}
			}
			keys[c] = prio{a: -w} // higher weight first
		}
	} else {
		for _, c := range candidates {
			level, order := orderPriority(p.OrderPriority, pods[c].Labels)
			keys[c] = prio{a: level, b: -order}
		}
	}
	sort.SliceStable(candidates, func(i, j int) bool {
		ki, kj := keys[candidates[i]], keys[candidates[j]]
		if ki.a != kj.a {
			return ki.a < kj.a
		}
		return ki.b < kj.b
	})
}

func orderPriority(terms []v1alpha1.UpdatePriorityOrderTerm, podLabels Labels) (level, order int64) {
	for i, t := range terms {
		if v, ok := podLabels.Lookup(t.OrderedKey); ok {
			return int64(i), intSuffix(v)
		}
	}
	return -1, 0
}

// intSuffix returns the integer at the end of v ("sts-10" -> 10), 0 when there is none.
func intSuffix(v string) int64 {
	start := len(v)
	for start > 0 && v[start-1] >= '0' && v[start-1] <= '9' {
		start--
	}
	var n int64
	for _, c := range v[start:] {
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0 // does not fit, as OpenKruise's strconv.ParseInt failure
		}
		n = n*10 + d
	}
	return n
}

// expandScatterTerms replaces a term with value "*" by one term per distinct value of its key
// among the pods (sorted), dropping duplicate terms.
func expandScatterTerms(terms v1alpha1.UpdateScatterStrategy, pods []*Pod) []v1alpha1.UpdateScatterTerm {
	seen := map[v1alpha1.UpdateScatterTerm]bool{}
	var out []v1alpha1.UpdateScatterTerm
	add := func(t v1alpha1.UpdateScatterTerm) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, t := range terms {
		if t.Value != "*" {
			add(t)
			continue
		}
		values := map[string]bool{}
		for _, p := range pods {
			if v, ok := p.Labels.Lookup(t.Key); ok {
				values[v] = true
			}
		}
		sorted := make([]string, 0, len(values))
		for v := range values {
			sorted = append(sorted, v)
		}
		sort.Strings(sorted)
		for _, v := range sorted {
			add(v1alpha1.UpdateScatterTerm{Key: t.Key, Value: v})
		}
	}
	return out
}
