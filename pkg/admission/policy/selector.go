package policy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// matchConstraints selects pod CREATEs by the SidecarSet's selectors, natively in kube-apiserver:
// spec.selector is the objectSelector; spec.namespace (which wins, as in the injector) or
// spec.namespaceSelector is the namespaceSelector, with the excluded namespaces added as a NotIn
// requirement on kubernetes.io/metadata.name.
//
// Every field kube-apiserver would default is set, so that a stored policy equals the compiled one.
func matchConstraints(ss *v1alpha1.SidecarSet, excluded []string) *admissionregistrationv1.MatchResources {
	equivalent := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.AllScopes
	return &admissionregistrationv1.MatchResources{
		ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{""},
					APIVersions: []string{"v1"},
					Resources:   []string{"pods"},
					Scope:       &scope,
				},
			},
		}},
		ObjectSelector:    ss.Spec.Selector.DeepCopy(),
		NamespaceSelector: namespaceConstraint(ss, excluded),
		MatchPolicy:       &equivalent,
	}
}

func namespaceConstraint(ss *v1alpha1.SidecarSet, excluded []string) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{}
	switch {
	case ss.Spec.Namespace != "":
		sel.MatchLabels = map[string]string{corev1.LabelMetadataName: ss.Spec.Namespace}
	case ss.Spec.NamespaceSelector != nil:
		sel = ss.Spec.NamespaceSelector.DeepCopy()
	}
	if len(excluded) > 0 {
		sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: append([]string(nil), excluded...),
		})
	}
	return sel
}
