package injection

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
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
	if apps.SelectsNoPod(sel) {
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

// Mismatch says which requirement keeps ss from a pod with podLabels in namespace ns, whose
// labels are nsLabels (kubernetes.io/metadata.name is filled in when absent): spec.namespace,
// a namespaceSelector or selector requirement, or a nil or empty selector. It returns "" when ss
// selects the pod (paused or not). It follows match, which decides; this only explains.
func Mismatch(ss *v1alpha1.SidecarSet, ns string, nsLabels, podLabels map[string]string) string {
	if ss.Spec.Namespace != "" {
		if ss.Spec.Namespace != ns {
			return fmt.Sprintf("spec.namespace is %q, the pod is in %q", ss.Spec.Namespace, ns)
		}
	} else if ss.Spec.NamespaceSelector != nil {
		_, nsLabels = withNameLabel(ns, nsLabels)
		if why := Unmet(ss.Spec.NamespaceSelector, nsLabels); why != "" {
			return fmt.Sprintf("spec.namespaceSelector: namespace %q: %s", ns, why)
		}
	}
	sel := ss.Spec.Selector
	if apps.SelectsNoPod(sel) {
		return "spec.selector is empty and selects no pod"
	}
	if why := Unmet(sel, podLabels); why != "" {
		return "spec.selector: " + why
	}
	return ""
}

// Unmet describes the first requirement of sel that set does not meet (matchLabels in key order,
// then matchExpressions in order), or a structural error of the selector; "" when sel selects set.
func Unmet(sel *metav1.LabelSelector, set map[string]string) string {
	for i := range sel.MatchExpressions {
		if err := checkRequirement(&sel.MatchExpressions[i]); err != nil {
			return fmt.Sprintf("matchExpressions[%d]: %v", i, err)
		}
	}
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if got, ok := set[k]; !ok {
			return fmt.Sprintf("matchLabels %s=%s: label %s is absent", k, sel.MatchLabels[k], k)
		} else if got != sel.MatchLabels[k] {
			return fmt.Sprintf("matchLabels %s=%s: label %s is %q", k, sel.MatchLabels[k], k, got)
		}
	}
	for i := range sel.MatchExpressions {
		r := &sel.MatchExpressions[i]
		if !selectorMatchesOne(r, set) {
			got, has := set[r.Key]
			state := "absent"
			if has {
				state = fmt.Sprintf("%q", got)
			}
			return fmt.Sprintf("matchExpressions[%d] %s %s %v: label %s is %s", i, r.Key, r.Operator, r.Values, r.Key, state)
		}
	}
	return ""
}

// selectorMatchesOne reports whether set meets one well-formed requirement.
func selectorMatchesOne(r *metav1.LabelSelectorRequirement, set map[string]string) bool {
	ok, _ := selectorMatches(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{*r}}, set)
	return ok
}
