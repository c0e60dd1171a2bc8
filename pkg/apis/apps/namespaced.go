package apps

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
	TakePartAsSidecarSet(&out.ObjectMeta, &out.Spec.Namespace, &out.Spec.NamespaceSelector)
	return out
}

// TakePartAsSidecarSet turns, in place, the metadata and namespace scope of a copy of a
// NamespacedSidecarSet into those of the SidecarSet it takes part as (of any version): named
// NamespacedName, cluster-scoped, spec.namespace its namespace and no namespaceSelector, a
// canary's base named as the base of the same namespace.
func TakePartAsSidecarSet(m *metav1.ObjectMeta, specNamespace *string, namespaceSelector **metav1.LabelSelector) {
	ns := m.Namespace
	m.Name, m.Namespace = NamespacedName(ns, m.Name), ""
	*specNamespace, *namespaceSelector = ns, nil
	if base, ok := m.Annotations[SidecarSetBaseAnnotation]; ok && base != "" {
		m.Annotations[SidecarSetBaseAnnotation] = NamespacedName(ns, base)
	}
}

// View returns a SidecarSet sharing n's metadata, spec and status (not copied), for the rules and
// strategies both kinds share.
func (n *NamespacedSidecarSet) View() *SidecarSet {
	return &SidecarSet{ObjectMeta: n.ObjectMeta, Spec: n.Spec, Status: n.Status}
}
