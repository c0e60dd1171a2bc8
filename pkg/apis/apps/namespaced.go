package apps

import "strings"

// NamespacedName returns the SidecarSet name a NamespacedSidecarSet takes part under in injection
// and upgrades: "<namespace>.<name>". SidecarSet names never contain a dot, so it is never a
// cluster-wide SidecarSet's name.
func NamespacedName(namespace, name string) string { return namespace + "." + name }

// SplitNamespacedName returns the namespace and the name of the NamespacedSidecarSet a SidecarSet
// name stands for; ok is false for the name of a cluster-wide SidecarSet.
func SplitNamespacedName(name string) (namespace, local string, ok bool) {
	return strings.Cut(name, ".")
}

// AsSidecarSet returns the SidecarSet n takes part under: named NamespacedName, cluster-scoped,
// selecting pods of n's namespace only; a canary's base is the one of the same namespace.
func (n *NamespacedSidecarSet) AsSidecarSet() *SidecarSet {
	out := &SidecarSet{ObjectMeta: *n.ObjectMeta.DeepCopy(), Spec: *n.Spec.DeepCopy(), Status: *n.Status.DeepCopy()}
	out.Name, out.Namespace = NamespacedName(n.Namespace, n.Name), ""
	out.Spec.Namespace, out.Spec.NamespaceSelector = n.Namespace, nil
	if base, ok := out.Annotations[SidecarSetBaseAnnotation]; ok && base != "" {
		out.Annotations[SidecarSetBaseAnnotation] = NamespacedName(n.Namespace, base)
	}
	return out
}

// View returns a SidecarSet sharing n's metadata, spec and status (not copied), for the rules and
// strategies both kinds share.
func (n *NamespacedSidecarSet) View() *SidecarSet {
	return &SidecarSet{ObjectMeta: n.ObjectMeta, Spec: n.Spec, Status: n.Status}
}
