package policy

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestKeyValues: a group whose members all require values of the key gets an objectSelector on
// those values; one member accepting any value (Exists) widens it to the key alone.
func TestKeyValues(t *testing.T) {
	with := func(sel *metav1.LabelSelector) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{}
		ss.Spec.Selector = sel
		return ss
	}
	labels := func(v string) *v1alpha1.SidecarSet {
		return with(&metav1.LabelSelector{MatchLabels: map[string]string{"app": v}})
	}
	in := func(values ...string) *v1alpha1.SidecarSet {
		return with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: values}}})
	}
	exists := with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}})
	for _, tc := range []struct {
		name string
		sets []*v1alpha1.SidecarSet
		want []string
	}{
		{"match labels", []*v1alpha1.SidecarSet{labels("b"), labels("a"), labels("b")}, []string{"a", "b"}},
		{"match labels and In", []*v1alpha1.SidecarSet{labels("a"), in("c", "b")}, []string{"a", "b", "c"}},
		{"one Exists", []*v1alpha1.SidecarSet{labels("a"), exists}, nil},
		{"at most maxSelectorValues", []*v1alpha1.SidecarSet{in("1", "2", "3", "4", "5", "6", "7"), labels("8")}, []string{"1", "2", "3", "4", "5", "6", "7", "8"}},
		// kube-apiserver validates each value of every stored policy's selector on every pod create.
		{"more values: the key alone", []*v1alpha1.SidecarSet{in("1", "2", "3", "4", "5", "6", "7"), labels("8"), labels("9")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, keyValues("app", tc.sets)); diff != "" {
				t.Errorf("keyValues (-want +got):\n%s", diff)
			}
		})
	}
	mc := matchConstraints("app", []string{"a"})
	want := []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}
	if diff := cmp.Diff(want, mc.ObjectSelector.MatchExpressions); diff != "" {
		t.Errorf("objectSelector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&metav1.LabelSelector{}, mc.NamespaceSelector); diff != "" {
		t.Errorf("namespaceSelector (-want +got):\n%s", diff)
	}
}

// TestExcludedNamespaces: the policies leave pods in the excluded namespaces alone (a match
// condition, since the namespaceSelector stays empty) and inject the same pod elsewhere.
func TestExcludedNamespaces(t *testing.T) {
	ss := &v1alpha1.SidecarSet{}
	ss.Name = "log"
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "busybox"}}}
	policies := compileAll(t, []*v1alpha1.SidecarSet{prepare(t, ss)}, []string{"kruise-system", "infra"})
	for _, tc := range []struct {
		namespace  string
		containers int
	}{{"default", 2}, {"kruise-system", 1}, {"infra", 1}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tc.namespace, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
		got := runAll(t, policies, identity(len(policies)), pod, namespace(tc.namespace, nil))
		if len(got.Spec.Containers) != tc.containers {
			t.Errorf("namespace %s: %d containers, want %d", tc.namespace, len(got.Spec.Containers), tc.containers)
		}
	}
}

// TestExactSelector: a group whose objectSelector selects only pods some member selects needs no
// match conditions; any member saying more (another label, a namespace, values beyond the
// selector's) brings them back.
func TestExactSelector(t *testing.T) {
	for _, tc := range []struct {
		name      string
		selectors []string
		exact     bool
	}{
		{"match labels", []string{"{matchLabels: {app: a}}", "{matchLabels: {app: b}}"}, true},
		{"In", []string{"{matchExpressions: [{key: app, operator: In, values: [a, b]}]}"}, true},
		{"Exists", []string{"{matchExpressions: [{key: app, operator: Exists}]}"}, true},
		{"Exists beside values", []string{"{matchExpressions: [{key: app, operator: Exists}]}", "{matchLabels: {app: b}}"}, false},
		{"two labels", []string{"{matchLabels: {app: a, tier: b}}"}, false},
		{"more values than the selector lists", []string{"{matchExpressions: [{key: app, operator: In, values: [a, b, c, d, e, f, g, h, i]}]}"}, false},
		{"a namespace", []string{"{matchLabels: {app: a}}\n  namespace: team"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sets []*v1alpha1.SidecarSet
			for i, sel := range tc.selectors {
				sets = append(sets, selecting(t, fmt.Sprintf("s%d", i), sel, fmt.Sprintf("c%d", i)))
			}
			plan, err := PlanPolicies(PlanInput{SidecarSets: sets, ExcludedNamespaces: []string{"kruise-system"}})
			if err != nil || len(plan.Policies) != 1 {
				t.Fatalf("%d policies, err %v", len(plan.Policies), err)
			}
			if got := len(plan.Policies[0].Spec.MatchConditions) == 0; got != tc.exact {
				t.Errorf("no match conditions: %v, want %v", got, tc.exact)
			}
		})
	}
}
