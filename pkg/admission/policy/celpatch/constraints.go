package celpatch

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// matchConstraints selects pod CREATEs that have the group's key, with one of values when given,
// natively in kube-apiserver (a pod none of the members could select never reaches CEL); the
// excluded namespaces (a match condition) and the members' selectors (variables.m) are CEL. The
// namespaceSelector is empty: a non-empty one costs every pod create its parsing, and the
// namespace's labels.
//
// Every field kube-apiserver would default is set, so that a stored policy equals the compiled one.
func matchConstraints(key string, values []string) *admissionregistrationv1.MatchResources {
	equivalent := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.AllScopes
	objects := &metav1.LabelSelector{}
	switch {
	case key != "" && len(values) > 0:
		objects.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}}
	case key != "":
		objects.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}
	}
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
		ObjectSelector:    objects,
		NamespaceSelector: &metav1.LabelSelector{},
		MatchPolicy:       &equivalent,
	}
}
