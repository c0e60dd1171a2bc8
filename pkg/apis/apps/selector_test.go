package apps

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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

// TestNamespaceSelector: spec.namespace wins and becomes a selector on the name label.
func TestNamespaceSelector(t *testing.T) {
	prod := &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	for _, tc := range []struct {
		name      string
		namespace string
		sel       *metav1.LabelSelector
		want      *metav1.LabelSelector
	}{
		{"neither", "", nil, nil},
		{"selector", "", prod, &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		{"spec.namespace", "shop", nil, &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}},
		{"spec.namespace wins", "shop", prod, &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}},
	} {
		if diff := cmp.Diff(tc.want, NamespaceSelector(tc.namespace, tc.sel)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestNamespaceLabels: the name label is filled in when absent, and a present one is kept.
func TestNamespaceLabels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   map[string]string
	}{
		{"nil", nil, map[string]string{"kubernetes.io/metadata.name": "shop"}},
		{"other labels", map[string]string{"env": "prod"}, map[string]string{"env": "prod", "kubernetes.io/metadata.name": "shop"}},
		{"present", map[string]string{"kubernetes.io/metadata.name": "shop"}, map[string]string{"kubernetes.io/metadata.name": "shop"}},
		{"present, other value", map[string]string{"kubernetes.io/metadata.name": "other"}, map[string]string{"kubernetes.io/metadata.name": "other"}},
	} {
		if diff := cmp.Diff(tc.want, NamespaceLabels("shop", tc.labels)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestNamespaceLabelsCopies: the caller's labels are never written.
func TestNamespaceLabelsCopies(t *testing.T) {
	in := map[string]string{"env": "prod"}
	NamespaceLabels("shop", in)
	if diff := cmp.Diff(map[string]string{"env": "prod"}, in); diff != "" {
		t.Errorf("input changed (-want +got):\n%s", diff)
	}
}

// TestSelectsNamespace: spec.namespace wins over namespaceSelector; no selector selects every
// namespace; the name label is filled in when absent; a malformed selector is an error.
func TestSelectsNamespace(t *testing.T) {
	prod := map[string]string{"env": "prod"}
	byName := func(v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": v}}
	}
	malformed := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}}}
	for _, tc := range []struct {
		name      string
		namespace string
		sel       *metav1.LabelSelector
		ns        string
		labels    map[string]string
		want      bool
		wantErr   bool
	}{
		{name: "no restriction", ns: "shop", want: true},
		{name: "empty selector", sel: &metav1.LabelSelector{}, ns: "shop", want: true},
		{name: "spec.namespace", namespace: "shop", ns: "shop", want: true},
		{name: "spec.namespace elsewhere", namespace: "shop", ns: "other", labels: prod},
		{name: "spec.namespace wins", namespace: "shop", sel: &metav1.LabelSelector{MatchLabels: prod}, ns: "shop", want: true},
		{name: "spec.namespace wins over a malformed selector", namespace: "shop", sel: malformed, ns: "shop", want: true},
		{name: "selector", sel: &metav1.LabelSelector{MatchLabels: prod}, ns: "shop", labels: prod, want: true},
		{name: "selector, other labels", sel: &metav1.LabelSelector{MatchLabels: prod}, ns: "shop"},
		{name: "the name label, absent", sel: byName("shop"), ns: "shop", want: true},
		{name: "the name label, present", sel: byName("shop"), ns: "shop", labels: map[string]string{"kubernetes.io/metadata.name": "shop"}, want: true},
		{name: "the labels' name label wins", sel: byName("shop"), ns: "shop", labels: map[string]string{"kubernetes.io/metadata.name": "other"}},
		{name: "NotIn the name", sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"shop"}}}}, ns: "shop"},
		{name: "malformed", sel: malformed, ns: "shop", labels: prod, wantErr: true},
	} {
		got, err := SelectsNamespace(tc.namespace, tc.sel, tc.ns, tc.labels)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestSelectorMatches: every operator, and structural errors whether or not the labels match.
func TestSelectorMatches(t *testing.T) {
	set := map[string]string{"app": "web", "tier": "front"}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name    string
		sel     *metav1.LabelSelector
		want    bool
		wantErr string
	}{
		{name: "empty", sel: &metav1.LabelSelector{}, want: true},
		{name: "matchLabels", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, want: true},
		{name: "matchLabels, other value", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		{name: "matchLabels, absent", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
		{name: "In", sel: req("app", metav1.LabelSelectorOpIn, "db", "web"), want: true},
		{name: "In, absent", sel: req("zone", metav1.LabelSelectorOpIn, "a")},
		{name: "NotIn", sel: req("app", metav1.LabelSelectorOpNotIn, "web")},
		{name: "NotIn, absent", sel: req("zone", metav1.LabelSelectorOpNotIn, "a"), want: true},
		{name: "Exists", sel: req("tier", metav1.LabelSelectorOpExists), want: true},
		{name: "DoesNotExist", sel: req("tier", metav1.LabelSelectorOpDoesNotExist)},
		{name: "In without values", sel: req("app", metav1.LabelSelectorOpIn),
			wantErr: `matchExpressions[0]: key "app": values must be non-empty for operator In`},
		{name: "Exists with values", sel: req("app", metav1.LabelSelectorOpExists, "web"),
			wantErr: `matchExpressions[0]: key "app": values must be empty for operator Exists`},
		{name: "unknown operator", sel: req("app", "Near", "web"),
			wantErr: `matchExpressions[0]: key "app": "Near" is not a valid label selector operator`},
		{name: "error though matchLabels fail", sel: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn}}},
			wantErr: `matchExpressions[0]: key "app": values must be non-empty for operator NotIn`},
	} {
		got, err := SelectorMatches(tc.sel, set)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tc.want || gotErr != tc.wantErr {
			t.Errorf("%s: %v, %q; want %v, %q", tc.name, got, gotErr, tc.want, tc.wantErr)
		}
	}
}
