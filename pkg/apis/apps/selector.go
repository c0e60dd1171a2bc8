package apps

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
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

// NamespaceSelector returns the effective namespace selector of a SidecarSet whose spec.namespace
// is namespace and spec.namespaceSelector is sel: spec.namespace, when set, wins and becomes
// matchLabels {kubernetes.io/metadata.name: namespace} (as OpenKruise and v1beta1 convert it);
// otherwise sel, nil selecting every namespace.
func NamespaceSelector(namespace string, sel *metav1.LabelSelector) *metav1.LabelSelector {
	if namespace != "" {
		return &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}}
	}
	return sel
}

// NamespaceLabels returns the labels nsLabels of namespace ns with kubernetes.io/metadata.name
// set to ns when absent (in a copy); labels that have it are returned as they are.
func NamespaceLabels(ns string, nsLabels map[string]string) map[string]string {
	if _, ok := nsLabels[corev1.LabelMetadataName]; ok {
		return nsLabels
	}
	out := make(map[string]string, len(nsLabels)+1)
	for k, v := range nsLabels {
		out[k] = v
	}
	out[corev1.LabelMetadataName] = ns
	return out
}

// SelectsNamespace reports whether a SidecarSet whose spec.namespace is namespace and
// spec.namespaceSelector is sel injects pods of namespace ns, whose labels are nsLabels:
// spec.namespace, when set, wins and must be ns; a nil or empty sel selects every namespace;
// otherwise sel must select NamespaceLabels(ns, nsLabels). A malformed sel is an error, never
// "no match". The injector, the rollout's pod source and admission all decide here.
func SelectsNamespace(namespace string, sel *metav1.LabelSelector, ns string, nsLabels map[string]string) (bool, error) {
	switch {
	case namespace != "":
		return namespace == ns, nil
	case sel == nil:
		return true, nil
	}
	return SelectorMatches(sel, NamespaceLabels(ns, nsLabels))
}

// SelectorMatches evaluates a label selector against a label set without building a
// labels.Selector (no allocation). An empty selector matches everything. Structural errors
// (unknown operator, values present or missing against the operator) are reported whether or not
// the labels match, as labels.Selector construction does; key and value syntax is validated when
// the SidecarSet is written.
func SelectorMatches(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
	for i := range sel.MatchExpressions {
		if err := checkRequirement(&sel.MatchExpressions[i]); err != nil {
			return false, fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
	}
	for k, v := range sel.MatchLabels {
		if got, ok := set[k]; !ok || got != v {
			return false, nil
		}
	}
	for i := range sel.MatchExpressions {
		if !requirementMatches(&sel.MatchExpressions[i], set) {
			return false, nil
		}
	}
	return true, nil
}

// requirementMatches reports whether set meets one well-formed requirement.
func requirementMatches(r *metav1.LabelSelectorRequirement, set map[string]string) bool {
	got, has := set[r.Key]
	switch r.Operator {
	case metav1.LabelSelectorOpIn:
		return has && slices.Contains(r.Values, got)
	case metav1.LabelSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, got)
	case metav1.LabelSelectorOpExists:
		return has
	case metav1.LabelSelectorOpDoesNotExist:
		return !has
	}
	return true
}

func checkRequirement(r *metav1.LabelSelectorRequirement) error {
	switch r.Operator {
	case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
		if len(r.Values) == 0 {
			return fmt.Errorf("key %q: values must be non-empty for operator %s", r.Key, r.Operator)
		}
	case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
		if len(r.Values) != 0 {
			return fmt.Errorf("key %q: values must be empty for operator %s", r.Key, r.Operator)
		}
	default:
		return fmt.Errorf("key %q: %q is not a valid label selector operator", r.Key, r.Operator)
	}
	return nil
}
