package rollout

import (
	"math"
	"sort"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// scatter spreads, term by term, the candidates carrying a scatter label evenly among the others
// (OpenKruise's CloneSet scatter order): terms are applied from the one most candidates match;
// for each, matching and non-matching candidates are interleaved in groups sized by their
// densities over all managed pods, and the last matching candidate goes to the end.
func scatter(terms []v1alpha1.UpdateScatterTerm, pods []*Pod, candidates []int) []int {
	if len(terms) == 0 || len(candidates) <= 1 {
		return candidates
	}
	for _, t := range orderScatterTerms(terms, pods, candidates) {
		candidates = scatterByTerm(t, pods, candidates)
	}
	return candidates
}

// orderScatterTerms keeps the terms some candidate matches, most matched first (stable). A single
// term is kept as is.
func orderScatterTerms(terms []v1alpha1.UpdateScatterTerm, pods []*Pod, candidates []int) []v1alpha1.UpdateScatterTerm {
	if len(terms) == 1 {
		return terms
	}
	count := map[v1alpha1.UpdateScatterTerm]int{}
	var out []v1alpha1.UpdateScatterTerm
	for _, t := range terms {
		for _, c := range candidates {
			if v, ok := pods[c].Labels.Lookup(t.Key); ok && v == t.Value {
				if count[t] == 0 {
					out = append(out, t)
				}
				count[t]++
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return count[out[i]] > count[out[j]] })
	return out
}

func scatterByTerm(t v1alpha1.UpdateScatterTerm, pods []*Pod, candidates []int) []int {
	var matched, unmatched []int
	for _, c := range candidates {
		if pods[c].Labels.Get(t.Key) == t.Value {
			matched = append(matched, c)
		} else {
			unmatched = append(unmatched, c)
		}
	}
	if len(matched) <= 1 || len(unmatched) <= 1 {
		return candidates
	}
	var totalMatched, totalUnmatched int
	for _, p := range pods {
		if p.Labels.Get(t.Key) == t.Value {
			totalMatched++
		} else {
			totalUnmatched++
		}
	}
	last := matched[len(matched)-1]
	matched = matched[:len(matched)-1]
	totalMatched--

	g := groupByDensity(totalMatched, totalUnmatched, len(matched), len(unmatched))
	out := make([]int, 0, len(candidates))
	if g.unmatchedRemainder > 0 {
		out = append(out, unmatched[:g.unmatchedRemainder]...)
		unmatched = unmatched[g.unmatchedRemainder:]
	}
	for i := 0; i < g.groups; i++ {
		matched, out = moveItems(matched, out, g.matchedSize)
		unmatched, out = moveItems(unmatched, out, g.unmatchedSize)
	}
	out = append(out, matched...)
	out = append(out, unmatched...)
	return append(out, last)
}

func moveItems(src, dst []int, n int) ([]int, []int) {
	if len(src) < n {
		return nil, append(dst, src...)
	}
	return src[n:], append(dst, src[:n]...)
}

type scatterGroups struct {
	groups, matchedSize, unmatchedSize, unmatchedRemainder int
}

func evenGroups(matched, unmatched int) scatterGroups {
	g := scatterGroups{groups: min(matched, unmatched)}
	if g.groups == 0 {
		return g
	}
	g.matchedSize = int(math.Round(float64(matched) / float64(g.groups)))
	g.unmatchedSize = int(math.Round(float64(unmatched) / float64(g.groups)))
	return g
}

// groupByDensity sizes the groups by the candidates' own densities when the matching ones are no
// denser among candidates than among all pods, else by the overall densities.
func groupByDensity(totalMatched, totalUnmatched, matched, unmatched int) scatterGroups {
	overall, own := evenGroups(totalMatched, totalUnmatched), evenGroups(matched, unmatched)
	if float32(totalUnmatched)/float32(totalMatched) >= float32(unmatched)/float32(matched) ||
		overall.matchedSize == 0 || overall.unmatchedSize == 0 {
		return own
	}
	g := scatterGroups{matchedSize: overall.matchedSize, unmatchedSize: overall.unmatchedSize}
	g.groups = min(matched/g.matchedSize, unmatched/g.unmatchedSize)
	g.unmatchedRemainder = unmatched - g.groups*g.unmatchedSize
	return g
}
