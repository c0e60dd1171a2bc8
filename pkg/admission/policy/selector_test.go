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
		{"many values", []*v1alpha1.SidecarSet{in("1", "2", "3", "4", "5", "6", "7"), labels("8"), labels("9")}, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, keyValues("app", tc.sets)); diff != "" {
				t.Errorf("keyValues (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExcludedNamespaces: the policies leave pods in the excluded namespaces alone (a match
// condition, since the namespaceSelector stays empty) and inject the same pod elsewhere.
func TestExcludedNamespaces(t *testing.T) {
	ss := &v1alpha1.SidecarSet{}
	ss.Name = "log"
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "busybox"}}}
	policies := compileAll(t, []*v1alpha1.SidecarSet{prepare(t, ss)}, []string{"sidecarset-system", "infra"})
	for _, tc := range []struct {
		namespace  string
		containers int
	}{{"default", 2}, {"sidecarset-system", 1}, {"infra", 1}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: tc.namespace, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
		got := runAll(t, policies, identity(len(policies)), pod, namespace(tc.namespace, nil))
		if len(got.Spec.Containers) != tc.containers {
			t.Errorf("namespace %s: %d containers, want %d", tc.namespace, len(got.Spec.Containers), tc.containers)
		}
	}
}

// TestControlPlaneNamespaces: the policies leave pods in a namespace labelled control-plane (any
// value) alone, as OpenKruise's webhook does, whether their group has match conditions (a member
// selecting by two labels) or not (the objectSelector says it all), and inject the same pod in a
// namespace without the label.
func TestControlPlaneNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name      string
		selector  string
		podLabels map[string]string
		nsLabels  map[string]string
		want      int
	}{
		{"objectSelector only, unlabelled namespace", "{matchLabels: {app: web}}", map[string]string{"app": "web"}, map[string]string{"env": "prod"}, 2},
		{"objectSelector only, control-plane namespace", "{matchLabels: {app: web}}", map[string]string{"app": "web"}, map[string]string{"control-plane": "controller-manager"}, 1},
		{"objectSelector only, empty control-plane value", "{matchLabels: {app: web}}", map[string]string{"app": "web"}, map[string]string{"control-plane": ""}, 1},
		{"match conditions, unlabelled namespace", "{matchLabels: {app: web, tier: front}}", map[string]string{"app": "web", "tier": "front"}, nil, 2},
		{"match conditions, control-plane namespace", "{matchLabels: {app: web, tier: front}}", map[string]string{"app": "web", "tier": "front"}, map[string]string{"control-plane": "x"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := prepare(t, selecting(t, "log", tc.selector, "log"))
			policies := compileAll(t, []*v1alpha1.SidecarSet{ss}, []string{"sidecarset-system"})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team", Labels: tc.podLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
			got := runAll(t, policies, identity(len(policies)), pod, namespace("team", tc.nsLabels))
			if len(got.Spec.Containers) != tc.want {
				t.Errorf("%d containers, want %d", len(got.Spec.Containers), tc.want)
			}
		})
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
		{"two labels", []string{"{matchLabels: {app: a, tier: b}}"}, false},
		{"In, more values", []string{"{matchExpressions: [{key: app, operator: In, values: [a, b, c, d, e, f, g, h, i]}]}"}, true},
		{"In and another expression", []string{"{matchExpressions: [{key: app, operator: In, values: [a]}, {key: tier, operator: Exists}]}"}, false},
		{"a namespace", []string{"{matchLabels: {app: a}}\n  namespace: team"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sets []*v1alpha1.SidecarSet
			for i, sel := range tc.selectors {
				sets = append(sets, selecting(t, fmt.Sprintf("s%d", i), sel, fmt.Sprintf("c%d", i)))
			}
			plan, err := PlanPolicies(PlanInput{SidecarSets: sets, ExcludedNamespaces: []string{"sidecarset-system"}})
			if err != nil || len(plan.Policies) != 1 {
				t.Fatalf("%d policies, err %v", len(plan.Policies), err)
			}
			if got := len(plan.Policies[0].Spec.MatchConditions) == 0; got != tc.exact {
				t.Errorf("no match conditions: %v, want %v", got, tc.exact)
			}
		})
	}
}

// TestAssign: SidecarSets selecting values of a key share the bucket of their first value and
// list those values natively; the values most SidecarSets select take the budget of
// maxNativeValues first, the others go to the webhook; SidecarSets accepting any value of a key
// share name buckets with the key alone; a name chosen to collide does not move a SidecarSet into
// another value's bucket.
func TestAssign(t *testing.T) {
	sel := func(name string, s *metav1.LabelSelector) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{}
		ss.Name = name
		ss.Spec.Selector = s
		return ss
	}
	app := func(name, value string) *v1alpha1.SidecarSet {
		return sel(name, &metav1.LabelSelector{MatchLabels: map[string]string{"app": value}})
	}
	exists := func(name, key string) *v1alpha1.SidecarSet {
		return sel(name, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOpExists}}})
	}
	oneKey := func(n int) []*v1alpha1.SidecarSet {
		var out []*v1alpha1.SidecarSet
		for i := 0; i < 5; i++ {
			out = append(out, app(fmt.Sprintf("five-%d", i), "bench"))
		}
		for i := 0; i < n; i++ {
			out = append(out, app(fmt.Sprintf("other-%04d", i), fmt.Sprintf("other-%d", i)))
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		sets     []*v1alpha1.SidecarSet
		same     [][]string // SidecarSets that share a policy
		differ   [][2]string
		over     []string // served by the webhook
		policies int      // distinct policies at most
	}{
		{name: "one value, one bucket", sets: oneKey(0), same: [][]string{{"five-0", "five-4"}}, policies: 1},
		{name: "the manual's pattern at scale: the busiest value first", sets: oneKey(995),
			same: [][]string{{"five-0", "five-1", "five-2", "five-3", "five-4"}}, over: []string{"other-0994"}, policies: 8},
		{name: "any value of a key", sets: []*v1alpha1.SidecarSet{exists("e1", "app"), exists("e2", "app"), app("v", "web")},
			same: [][]string{{"e1", "e2"}}, differ: [][2]string{{"e1", "v"}}, policies: 2},
		{name: "In joins the bucket of its first value", sets: []*v1alpha1.SidecarSet{
			sel("in", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "a"}}}}),
			app("a", "a")}, same: [][]string{{"in", "a"}}, policies: 1},
		{name: "a huge In goes to the webhook", sets: []*v1alpha1.SidecarSet{
			sel("huge", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: manyValues(20000)}}}),
			app("a", "a")}, over: []string{"huge"}, policies: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := assign(tc.sets, nil, nil)
			for _, names := range tc.same {
				for _, n := range names[1:] {
					if a.policy[n] == "" || a.policy[n] != a.policy[names[0]] {
						t.Errorf("%s in %q, %s in %q: want the same policy", names[0], a.policy[names[0]], n, a.policy[n])
					}
				}
			}
			for _, d := range tc.differ {
				if a.policy[d[0]] == a.policy[d[1]] {
					t.Errorf("%s and %s share %q", d[0], d[1], a.policy[d[0]])
				}
			}
			for _, n := range tc.over {
				if !a.over[n] || a.policy[n] != "" {
					t.Errorf("%s: over %v, policy %q; want the webhook", n, a.over[n], a.policy[n])
				}
			}
			distinct := map[string]bool{}
			listed := 0
			for _, ss := range tc.sets {
				if p := a.policy[ss.Name]; p != "" {
					distinct[p] = true
				}
			}
			groups := map[string][]*v1alpha1.SidecarSet{}
			for _, ss := range tc.sets {
				if p := a.policy[ss.Name]; p != "" {
					groups[p] = append(groups[p], ss)
				}
			}
			for _, g := range groups {
				listed += len(keyValues(groupKey(g[0]), g))
			}
			if len(distinct) > tc.policies {
				t.Errorf("%d policies, want at most %d", len(distinct), tc.policies)
			}
			if listed > maxNativeValues {
				t.Errorf("the objectSelectors list %d values, more than %d", listed, maxNativeValues)
			}
		})
	}
}

func manyValues(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("v%d", i)
	}
	return out
}
