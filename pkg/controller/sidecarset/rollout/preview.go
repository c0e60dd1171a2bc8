package rollout

import "github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"

// Preview plans the whole rollout of ss over pods, not only its next round: the plan of the next
// round, with each pod the rollout would upgrade numbered by the round (batch) that upgrades it.
// It assumes that every upgraded pod becomes available before the next round and that nothing
// else changes; the candidates keep their order, each round takes them as choose does (a pod that
// is not available costs nothing, an available one costs one of maxUnavailable), and partition
// keeps the last ones. A rollout that cannot progress (maxUnavailable 0) numbers nothing past the
// first round.
func Preview(ss *v1alpha1.SidecarSet, pods []*Pod) *Result {
	return PreviewWith(ss, pods, Options{})
}

// PreviewWith previews as Preview does, knowing opts.
func PreviewWith(ss *v1alpha1.SidecarSet, pods []*Pod, opts Options) *Result {
	res, r := planRound(ss, pods, opts)
	batch := make(map[*Pod]int32, len(r.candidates))
	keep := len(r.candidates) - int(res.Partition)
	unavailable := res.Unavailable
	for n, next := int32(1), 0; next < keep; n++ {
		taken := 0
		for next < keep {
			f := &r.facts[r.candidates[next]]
			if f.readyForSidecar {
				if unavailable >= res.MaxUnavailable {
					break
				}
				unavailable++
			}
			batch[f.pod] = n
			next++
			taken++
		}
		if taken == 0 {
			break
		}
		unavailable = 0
	}
	for i := range res.Pods {
		res.Pods[i].Batch = batch[res.Pods[i].Pod]
	}
	return res
}
