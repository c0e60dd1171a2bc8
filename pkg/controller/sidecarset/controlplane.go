package sidecarset

import (
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// skipsControlPlane reports whether namespace is labelled apps.ControlPlaneNamespaceLabel: no
// injection path injects its pods (as OpenKruise's webhook leaves them alone), so a pod there
// that misses a SidecarSet is NamespaceExcluded, never evicted for repair. A namespace the cache
// does not hold (deleted, its pods going with it) is not.
func (s *PodSource) skipsControlPlane(namespace string) bool {
	if s == nil {
		return false
	}
	ns, err := s.namespaces.Lister().Get(namespace)
	return err == nil && apps.SkipsControlPlane(ns.Labels)
}
