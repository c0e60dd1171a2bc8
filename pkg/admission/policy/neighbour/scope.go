package neighbour

import (
	"maps"
	"slices"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Tenancy: a NamespacedSidecarSet takes part as the SidecarSet "<namespace>.<name>" restricted to
// its namespace, and it is written by that namespace's editors. Whatever it says, it must not
// change how a pod of another namespace is injected, nor the path of a cluster SidecarSet:
//
//   - a cluster SidecarSet is classified (neighbour count, ambiguous names, size) against its
//     cluster neighbours only;
//   - the sidecar names of its NamespacedSidecarSet neighbours enter its policy for the pods of
//     their namespace only (see celpatch), within a budget per namespace (the same neighbour count and
//     name checks, maxTenantNames) and in all (maxTenantShare);
//   - a namespace beyond that budget is handed off: the cluster SidecarSet's policy leaves its
//     pods to the webhook, which receives them in that namespace only.

// maxTenantNames is the most characters of sidecar names the NamespacedSidecarSets of one
// namespace add to a cluster SidecarSet's policy; maxTenantShare is the most all namespaces add.
const (
	maxTenantNames = 2_000
	maxTenantShare = 16_000
)

// TenantNamespace returns the namespace of the NamespacedSidecarSet ss stands for, "" for a
// cluster SidecarSet.
func TenantNamespace(ss *v1alpha1.SidecarSet) string {
	if ns, _, ok := v1alpha1.SplitNamespacedName(ss.Name); ok {
		return ns
	}
	return ""
}

// Scope is the neighbours of a SidecarSet by where they meet its pods.
type Scope struct {
	Shared  []*v1alpha1.SidecarSet            // in every namespace it injects
	Tenants map[string][]*v1alpha1.SidecarSet // NamespacedSidecarSets, in their namespace only
	Handoff []string                          // namespaces whose pods its policy leaves to the webhook
}

// ScopeOf splits the neighbours near of ss (see Tenancy). The neighbours of a
// NamespacedSidecarSet all meet it in its own namespace: they are shared.
func ScopeOf(ss *v1alpha1.SidecarSet, near []*v1alpha1.SidecarSet) Scope {
	out := Scope{Tenants: map[string][]*v1alpha1.SidecarSet{}}
	if TenantNamespace(ss) != "" {
		out.Shared = near
		return out
	}
	for _, o := range near {
		if ns := TenantNamespace(o); ns != "" {
			out.Tenants[ns] = append(out.Tenants[ns], o)
		} else {
			out.Shared = append(out.Shared, o)
		}
	}
	share := 0
	for _, ns := range slices.Sorted(maps.Keys(out.Tenants)) {
		list := out.Tenants[ns]
		all := append(append([]*v1alpha1.SidecarSet(nil), out.Shared...), list...)
		size := sidecarNamesSize(list)
		if len(all) > MaxNeighbours || AmbiguousName(ss, all) != "" || size > maxTenantNames || share+size > maxTenantShare {
			out.Handoff = append(out.Handoff, ns)
			delete(out.Tenants, ns)
			continue
		}
		share += size
	}
	return out
}

// sidecarNamesSize is the characters of the sidecar names of sets, as CEL string literals.
func sidecarNamesSize(sets []*v1alpha1.SidecarSet) int {
	n := 0
	for _, ss := range sets {
		for _, list := range [][]v1alpha1.SidecarContainer{ss.Spec.Containers, ss.Spec.InitContainers} {
			for i := range list {
				n += len(list[i].Name) + 4
			}
		}
	}
	return n
}
