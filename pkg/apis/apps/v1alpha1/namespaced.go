package v1alpha1

import "github.com/sidecarset/apiserver/pkg/apis/apps"

// A NamespacedSidecarSet takes part in injection and upgrades as the SidecarSet named
// "<namespace>.<name>" with spec.namespace set to its namespace. SidecarSet names never contain a
// dot (OpenKruise's name rule), so this name is never a cluster-wide SidecarSet's, and it is what
// pods record in their annotations (kruise.io/sidecarset-hash, the injected list), what revisions
// carry in the apps.kruise.io/sidecarset-name label and what the injection policies are named
// after. Namespace and name together therefore fit a label value (63 characters).

// NamespacedName returns the SidecarSet name a NamespacedSidecarSet takes part under.
func NamespacedName(namespace, name string) string { return apps.NamespacedName(namespace, name) }

// SplitNamespacedName returns the namespace and the name of the NamespacedSidecarSet a SidecarSet
// name stands for; ok is false for the name of a cluster-wide SidecarSet.
func SplitNamespacedName(name string) (namespace, local string, ok bool) {
	return apps.SplitNamespacedName(name)
}

// IsNamespaced reports whether ss stands for a NamespacedSidecarSet (AsSidecarSet made it).
func IsNamespaced(ss *SidecarSet) bool {
	_, _, ok := SplitNamespacedName(ss.Name)
	return ok
}

// AsSidecarSet returns the SidecarSet n takes part under: named NamespacedName, cluster-scoped,
// selecting pods in n's namespace only. A canary's base annotation names the base of the same
// namespace.
func (n *NamespacedSidecarSet) AsSidecarSet() *SidecarSet {
	out := &SidecarSet{ObjectMeta: *n.ObjectMeta.DeepCopy(), Spec: *n.Spec.DeepCopy(), Status: *n.Status.DeepCopy()}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "SidecarSet"
	apps.TakePartAsSidecarSet(&out.ObjectMeta, &out.Spec.Namespace, &out.Spec.NamespaceSelector)
	return out
}

// AsNamespaced returns the NamespacedSidecarSet ss stands for, or nil when ss is cluster-wide.
func AsNamespaced(ss *SidecarSet) *NamespacedSidecarSet {
	ns, name, ok := SplitNamespacedName(ss.Name)
	if !ok {
		return nil
	}
	out := &NamespacedSidecarSet{ObjectMeta: *ss.ObjectMeta.DeepCopy(), Spec: *ss.Spec.DeepCopy(), Status: *ss.Status.DeepCopy()}
	out.APIVersion, out.Kind = SchemeGroupVersion.String(), "NamespacedSidecarSet"
	out.Name, out.Namespace = name, ns
	out.Spec.Namespace = ""
	if base, ok := out.Annotations[SidecarSetBaseAnnotation]; ok {
		if _, local, ok := SplitNamespacedName(base); ok {
			out.Annotations[SidecarSetBaseAnnotation] = local
		}
	}
	return out
}
