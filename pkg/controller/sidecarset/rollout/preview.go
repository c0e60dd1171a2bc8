package rollout

import "github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"

// Preview plans the whole rollout of ss over pods, not only its next round: the plan of the next
// round, with each pod the rollout would upgrade numbered by the round (batch) that upgrades it.
// It assumes that every upgraded pod becomes available before the next round and that nothing
// else changes; the candidates keep their order, each round takes them as choose does (a pod that
// is not available costs nothing, an available one costs one of maxUnavailable and of its
// namespace's share, one whose namespace's share is used up is left to a later round), and
// partition keeps the last ones. A rollout that cannot progress (maxUnavailable 0) numbers
// nothing past the first round.
func Preview(ss *v1alpha1.SidecarSet, pods []*Pod) *Result {
	return PreviewWith(ss, pods, Options{})
}

// PreviewWith previews as Preview does, knowing opts.
func PreviewWith(ss *v1alpha1.SidecarSet, pods []*Pod, opts Options) *Result {
	res, r := planRound(ss, pods, opts)
	batch := make(map[*Pod]int32, len(r.candidates))
	left := r.candidates[:max(0, len(r.candidates)-int(res.Partition))]
	unavailable, used := res.Unavailable, r.shares.used(false)
	for n := int32(1); len(left) > 0; n++ {
		var later []int
		stopped := false
		r.shares.contend(r.managed, r.facts, left, func(*Pod) bool { return false })
		for _, i := range left {
			f := &r.facts[i]
			switch ready := f.readyForSidecar; {
			case stopped, ready && r.shares.full(used, f.pod.namespace):
				later = append(later, i)
				continue
			case ready && unavailable >= res.MaxUnavailable:
				stopped = true
				later = append(later, i)
				continue
			case ready:
				unavailable++
				r.shares.take(used, f.pod.namespace)
			}
			batch[f.pod] = n
		}
		if len(later) == len(left) {
			break
		}
		left, unavailable, used = later, 0, r.shares.used(true)
	}
	for i := range res.Pods {
		res.Pods[i].Batch = batch[res.Pods[i].Pod]
	}
	return res
}
