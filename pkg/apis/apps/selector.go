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
