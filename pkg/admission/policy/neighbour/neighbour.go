package neighbour

import (
	"maps"
	"slices"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/selectoroverlap"
)

// MaxNeighbours is the most SidecarSets that may share pods with a policy-path SidecarSet: its
// CEL names their sidecars (to place its own among them and to leave pods that declare one to the
// webhook), so its size, what kube-apiserver compiles, and what a write of any of them rewrites grow
// with them. The webhook places sidecars among any number at no such cost.
const MaxNeighbours = 32

// Neighbours returns the SidecarSets among others that may inject into a pod ss injects into (a
// sound test: selectoroverlap.Intersect never calls co-matching selectors disjoint).
func Neighbours(ss *v1alpha1.SidecarSet, others []*v1alpha1.SidecarSet) []*v1alpha1.SidecarSet {
	out := []*v1alpha1.SidecarSet{}
	for _, o := range others {
		if o != nil && o.Name != ss.Name && mayShare(ss, o) {
			out = append(out, o)
		}
	}
	return out
}

// mayShare reports whether two SidecarSets may both inject into one pod.
func mayShare(a, b *v1alpha1.SidecarSet) bool {
	return !a.Spec.InjectionStrategy.Paused && !b.Spec.InjectionStrategy.Paused &&
		selectoroverlap.Intersect(a.Spec.Selector, b.Spec.Selector) &&
		selectoroverlap.Intersect(apps.NamespaceSelector(a.Spec.Namespace, a.Spec.NamespaceSelector),
			apps.NamespaceSelector(b.Spec.Namespace, b.Spec.NamespaceSelector))
}

// AmbiguousName returns a container name that neighbours sorting before and after ss both use:
// the policy could not tell whose sidecar it meets in a pod.
func AmbiguousName(ss *v1alpha1.SidecarSet, near []*v1alpha1.SidecarSet) string {
	before, after := map[string]bool{}, map[string]bool{}
	for _, o := range near {
		side := after
		if o.Name < ss.Name {
			side = before
		}
		for _, list := range [][]v1alpha1.SidecarContainer{o.Spec.Containers, o.Spec.InitContainers} {
			for i := range list {
				side[list[i].Name] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(before)) {
		if after[n] {
			return n
		}
	}
	return ""
}
