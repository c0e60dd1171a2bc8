package apps

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// SelectsNoPod reports whether a SidecarSet's spec.selector selects no pod at all: nil or empty.
// (A label selector that is empty selects everything elsewhere in Kubernetes; a SidecarSet's
// never does: validation refuses one, and a stored one injects into nothing, as in OpenKruise.)
// The injector, the policy compiler, the rollout's pod source and explain all read it here.
func SelectsNoPod(sel *metav1.LabelSelector) bool {
	return sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0
}

// PodSelector is a SidecarSet's spec.selector as a labels.Selector: labels.Nothing() when it
// selects no pod (SelectsNoPod).
func PodSelector(sel *metav1.LabelSelector) (labels.Selector, error) {
	if SelectsNoPod(sel) {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(sel)
}

// SelectsNamespace reports whether a SidecarSet injects pods of the namespace ns (with these
// labels): its spec.namespace, when set, wins over namespaceSelector (as OpenKruise converts it);
// no namespaceSelector selects every namespace. kubernetes.io/metadata.name is ns whatever the
// labels say. A selector that cannot be parsed selects nothing.
func SelectsNamespace(ss *SidecarSet, ns string, nsLabels map[string]string) bool {
	switch {
	case ss.Spec.Namespace != "":
		return ss.Spec.Namespace == ns
	case ss.Spec.NamespaceSelector == nil:
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.NamespaceSelector)
	if err != nil {
		return false
	}
	set := labels.Set{}
	for k, v := range nsLabels {
		set[k] = v
	}
	set["kubernetes.io/metadata.name"] = ns
	return sel.Matches(set)
}
