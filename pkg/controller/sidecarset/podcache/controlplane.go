package podcache

import (
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// ExcludedFromInjection reports whether no injection path injects the pods of namespace
// (apps.ExcludedFromInjection: one of excluded, or labelled apps.ControlPlaneNamespaceLabel, as
// OpenKruise's webhook leaves them alone), so that a pod there that misses a SidecarSet is
// NamespaceExcluded, never evicted for repair. A namespace the cache does not hold (deleted, its
// pods going with it) is excluded by name only.
func (s *Source) ExcludedFromInjection(namespace string, excluded []string) bool {
	var labels map[string]string
	if s != nil {
		if ns, err := s.namespaces.Lister().Get(namespace); err == nil {
			labels = ns.Labels
		}
	}
	return apps.ExcludedFromInjection(namespace, labels, excluded)
}
