package apps

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestPodSelector: the empty selector's one meaning, nothing, and every other selector as
// Kubernetes reads it.
func TestPodSelector(t *testing.T) {
	pod := labels.Set{"app": "web"}
	for _, tc := range []struct {
		name    string
		sel     *metav1.LabelSelector
		none    bool
		selects bool
	}{
		{"nil", nil, true, false},
		{"empty", &metav1.LabelSelector{}, true, false},
		{"empty lists", &metav1.LabelSelector{MatchLabels: map[string]string{}, MatchExpressions: []metav1.LabelSelectorRequirement{}}, true, false},
		{"matching", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, false, true},
		{"not matching", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, false, false},
		{"NotIn", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}, false, true},
	} {
		sel, err := PodSelector(tc.sel)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if SelectsNoPod(tc.sel) != tc.none || sel.Matches(pod) != tc.selects {
			t.Errorf("%s: SelectsNoPod %v, selects the pod %v; want %v, %v", tc.name, SelectsNoPod(tc.sel), sel.Matches(pod), tc.none, tc.selects)
		}
	}
}

// TestSelectsNamespace: spec.namespace wins over namespaceSelector; no selector selects every
// namespace; the name label is the namespace's own.
func TestSelectsNamespace(t *testing.T) {
	prod := map[string]string{"env": "prod"}
	for _, tc := range []struct {
		name   string
		spec   SidecarSetSpec
		ns     string
		labels map[string]string
		want   bool
	}{
		{"no restriction", SidecarSetSpec{}, "shop", nil, true},
		{"spec.namespace", SidecarSetSpec{Namespace: "shop"}, "shop", nil, true},
		{"spec.namespace elsewhere", SidecarSetSpec{Namespace: "shop"}, "other", prod, false},
		{"spec.namespace wins", SidecarSetSpec{Namespace: "shop", NamespaceSelector: &metav1.LabelSelector{MatchLabels: prod}}, "shop", nil, true},
		{"selector", SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: prod}}, "shop", prod, true},
		{"selector, other labels", SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: prod}}, "shop", nil, false},
		{"the name label", SidecarSetSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}}, "shop", nil, true},
	} {
		if got := SelectsNamespace(&SidecarSet{Spec: tc.spec}, tc.ns, tc.labels); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
