package injection

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// namespaceNameLabel is the label Kubernetes sets on every namespace to its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// matchNamespace reports whether ss applies to pods of namespace ns, whose labels are nsLabels.
// A v1alpha1 spec.namespace restricts to that namespace and wins over namespaceSelector (OpenKruise
// converts it to a namespaceSelector on kubernetes.io/metadata.name, dropping the other one). A
// nil namespaceSelector selects every namespace, an empty one too.
func matchNamespace(ss *v1alpha1.SidecarSet, ns string, nsLabels map[string]string) (bool, error) {
	if ss.Spec.Namespace != "" {
		return ss.Spec.Namespace == ns, nil
	}
	if ss.Spec.NamespaceSelector == nil {
		return true, nil
	}
	ok, err := selectorMatches(ss.Spec.NamespaceSelector, nsLabels)
	if err != nil {
		return false, newError(ss.Name, "spec.namespaceSelector", err)
	}
	return ok, nil
}

// matchPod reports whether ss's selector selects a pod with these labels. A nil or empty selector
// never matches.
func matchPod(ss *v1alpha1.SidecarSet, podLabels map[string]string) (bool, error) {
	sel := ss.Spec.Selector
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return false, nil
	}
	ok, err := selectorMatches(sel, podLabels)
	if err != nil {
		return false, newError(ss.Name, "spec.selector", err)
	}
	return ok, nil
}

// selectorMatches evaluates a label selector against a label set without building a
// labels.Selector (no allocation). An empty selector matches everything. Structural errors
// (unknown operator, values present or missing against the operator) are reported whether or not
// the labels match, as labels.Selector construction does; key and value syntax is validated when
// the SidecarSet is written.
func selectorMatches(sel *metav1.LabelSelector, set map[string]string) (bool, error) {
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
		r := &sel.MatchExpressions[i]
		got, has := set[r.Key]
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			if !has || !contains(r.Values, got) {
				return false, nil
			}
		case metav1.LabelSelectorOpNotIn:
			if has && contains(r.Values, got) {
				return false, nil
			}
		case metav1.LabelSelectorOpExists:
			if !has {
				return false, nil
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if has {
				return false, nil
			}
		}
	}
	return true, nil
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

func contains(values []string, v string) bool {
	for _, x := range values {
		if x == v {
			return true
		}
	}
	return false
}
