package injection

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// matchNamespace reports whether ss applies to pods of namespace ns, whose labels are nsLabels
// (apps.SelectsNamespace).
func matchNamespace(ss *v1alpha1.SidecarSet, ns string, nsLabels map[string]string) (bool, error) {
	ok, err := apps.SelectsNamespace(ss.Spec.Namespace, ss.Spec.NamespaceSelector, ns, nsLabels)
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
	ok, err := apps.SelectorMatches(sel, podLabels)
	if err != nil {
		return false, newError(ss.Name, "spec.selector", err)
	}
	return ok, nil
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
		if why := Unmet(ss.Spec.NamespaceSelector, apps.NamespaceLabels(ns, nsLabels)); why != "" {
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
	if _, err := apps.SelectorMatches(sel, nil); err != nil {
		return err.Error()
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
	ok, _ := apps.SelectorMatches(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{*r}}, set)
	return ok
}
