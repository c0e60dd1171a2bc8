package webhookconfig

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// webhooksCalled returns how many of the webhooks of matches call the server for pod, as
// kube-apiserver decides.
func webhooksCalled(t testing.TB, matches []WebhookMatch, pod *corev1.Pod) int {
	t.Helper()
	called := 0
	for _, m := range matches {
		if policytest.WebhookCalls(t, m.ObjectSelector, m.Condition, pod) {
			called++
		}
	}
	return called
}

// selecting is a SidecarSet named name whose selector (YAML) selects pods it injects container
// into.
func selecting(t testing.TB, name, selector, container string) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	doc := fmt.Sprintf("metadata: {name: %s}\nspec:\n  selector: %s\n  containers: [{name: %s, image: busybox}]\n", name, selector, container)
	if err := yaml.UnmarshalStrict([]byte(doc), ss); err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestWebhookMatches: the webhooks call the server once for each pod it has work for, never for
// any other, and need no CEL where a label selector says it all.
func TestWebhookMatches(t *testing.T) {
	app := selecting(t, "app", "{matchLabels: {app: web}}", "log")
	tier := selecting(t, "tier", "{matchExpressions: [{key: tier, operator: In, values: [front, back]}]}", "proxy")
	team := selecting(t, "team", "{matchExpressions: [{key: team, operator: Exists}]}", "audit")
	anyPod := selecting(t, "any", "{matchExpressions: [{key: app, operator: NotIn, values: [db]}]}", "trace")
	type pod struct {
		pod  *corev1.Pod
		want int
	}
	many := func() []*v1alpha1.SidecarSet {
		var out []*v1alpha1.SidecarSet
		for i := 0; i <= apps.MaxWebhookLabelKeys; i++ {
			out = append(out, selecting(t, fmt.Sprintf("k%d", i), fmt.Sprintf("{matchLabels: {k%d: v}}", i), fmt.Sprintf("c%d", i)))
		}
		return out
	}()
	for _, tc := range []struct {
		name            string
		webhook, policy []*v1alpha1.SidecarSet
		pods            []pod
		webhooks        int // per class of namespace
		conditions      int
	}{
		{"nothing stored", nil, nil, []pod{{policytest.LabelledPod(nil), 0}, {policytest.LabelledPod(map[string]string{"app": "web"}), 0}}, 1, 0},
		{"webhook path only: selectors, no CEL", []*v1alpha1.SidecarSet{app, tier, team}, nil, []pod{
			{policytest.LabelledPod(nil), 0},
			{policytest.LabelledPod(map[string]string{"app": "web"}), 1},
			{policytest.LabelledPod(map[string]string{"app": "db"}), 0},
			{policytest.LabelledPod(map[string]string{"tier": "back", "app": "web", "team": "x"}), 1},
			{policytest.LabelledPod(map[string]string{"tier": "middle", "team": "x"}), 1},
			{policytest.LabelledPod(map[string]string{"tier": "middle"}), 0},
		}, 3, 0},
		{"policy path only: declared names of pods a policy may select", nil, []*v1alpha1.SidecarSet{app, tier}, []pod{
			{policytest.LabelledPod(map[string]string{"app": "web"}), 0},
			{policytest.LabelledPod(map[string]string{"app": "web"}, "log"), 1},
			{policytest.LabelledPod(map[string]string{"app": "web"}, "proxy"), 1},
			{policytest.LabelledPod(map[string]string{"app": "db"}, "log"), 0},
			{policytest.LabelledPod(nil, "log"), 0},
			{policytest.LabelledPod(map[string]string{"tier": "front"}, "proxy"), 1},
		}, 2, 2},
		{"both paths", []*v1alpha1.SidecarSet{tier}, []*v1alpha1.SidecarSet{app}, []pod{
			{policytest.LabelledPod(map[string]string{"app": "web"}), 0},
			{policytest.LabelledPod(map[string]string{"app": "web", "tier": "front"}), 1},
			{policytest.LabelledPod(map[string]string{"tier": "front"}), 1},
			{policytest.LabelledPod(map[string]string{"app": "web"}, "log"), 1},
		}, 2, 1},
		{"a selector requiring no label: one webhook", []*v1alpha1.SidecarSet{anyPod}, []*v1alpha1.SidecarSet{app}, []pod{
			{policytest.LabelledPod(nil), 1}, {policytest.LabelledPod(map[string]string{"app": "web"}), 1},
		}, 1, 0},
		{"more keys than webhooks: one with a condition", many, nil, []pod{
			{policytest.LabelledPod(nil), 0}, {policytest.LabelledPod(map[string]string{"k3": "v"}), 1}, {policytest.LabelledPod(map[string]string{"k3": "w"}), 0},
		}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			matches, _ := Matches(tc.webhook, tc.policy, nil)
			conditions := 0
			for _, m := range matches {
				if m.Condition != "" {
					conditions++
				}
			}
			if len(matches) != tc.webhooks || conditions != tc.conditions {
				t.Errorf("%d webhooks, %d with a condition; want %d, %d", len(matches), conditions, tc.webhooks, tc.conditions)
			}
			for _, p := range tc.pods {
				if got := webhooksCalled(t, matches, p.pod); got != p.want {
					t.Errorf("pod %v with %d containers: called %d times, want %d", p.pod.Labels, len(p.pod.Spec.Containers), got, p.want)
				}
			}
		})
	}
}

// TestWebhooksWidenedBy: the SidecarSets that leave the webhooks without a label selector are
// named, with the reason and whether every pod then calls the server.
func TestWebhooksWidenedBy(t *testing.T) {
	app := selecting(t, "app", "{matchLabels: {app: web}}", "log")
	anyPod := selecting(t, "any", "{matchExpressions: [{key: app, operator: NotIn, values: [db]}]}", "trace")
	var many []*v1alpha1.SidecarSet
	for i := 0; i <= apps.MaxWebhookLabelKeys; i++ {
		many = append(many, selecting(t, fmt.Sprintf("k%d", i), fmt.Sprintf("{matchLabels: {k%d: v}}", i), fmt.Sprintf("c%d", i)))
	}
	bigName := strings.Repeat("x", 60)
	var huge []*v1alpha1.SidecarSet
	for i := 0; i <= apps.MaxWebhookLabelKeys; i++ {
		for j := 0; j < 100; j++ {
			huge = append(huge, selecting(t, fmt.Sprintf("h%d-%d", i, j), fmt.Sprintf("{matchLabels: {k%d: %s%d}}", i, bigName, j), fmt.Sprintf("c%d", i)))
		}
	}
	for _, tc := range []struct {
		name            string
		webhook, policy []*v1alpha1.SidecarSet
		want            map[string]apps.Widening
	}{
		{"label selectors say it all", []*v1alpha1.SidecarSet{app}, nil, nil},
		{"a webhook-path selector requiring no label: every pod calls the server", []*v1alpha1.SidecarSet{anyPod, app}, nil,
			map[string]apps.Widening{"any": {Reason: apps.WideningSelectorRequiresNoLabel, CallsServer: true}}},
		{"a policy-path one: every pod meets the condition", []*v1alpha1.SidecarSet{app}, []*v1alpha1.SidecarSet{anyPod},
			map[string]apps.Widening{"any": {Reason: apps.WideningSelectorRequiresNoLabel, CallsServer: false}}},
		{"more keys than webhooks: all of them", many[:1], many[1:], func() map[string]apps.Widening {
			out := map[string]apps.Widening{}
			for _, ss := range many {
				out[ss.Name] = apps.Widening{Reason: apps.WideningTooManyLabelKeys, CallsServer: false}
			}
			return out
		}()},
		{"and a condition too large: every pod calls the server", huge, nil, func() map[string]apps.Widening {
			out := map[string]apps.Widening{}
			for _, ss := range huge {
				out[ss.Name] = apps.Widening{Reason: apps.WideningMatchConditionTooLarge, CallsServer: true}
			}
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := Matches(tc.webhook, tc.policy, nil)
			if len(got) != len(tc.want) {
				t.Fatalf("widened by %d SidecarSets, want %d: %v", len(got), len(tc.want), got)
			}
			for name, w := range tc.want {
				if got[name] != w {
					t.Errorf("%s: %+v, want %+v", name, got[name], w)
				}
				if !strings.Contains(got[name].Message(), "no label selector narrows") {
					t.Errorf("%s: message %q", name, got[name].Message())
				}
			}
		})
	}
}

// TestExpandWebhooks: each template of the configuration becomes one webhook per match, and an
// expanded configuration expands again to the same webhooks.
func TestExpandWebhooks(t *testing.T) {
	fail, ignore := admissionregistrationv1.Fail, admissionregistrationv1.Ignore
	templates := []admissionregistrationv1.MutatingWebhook{
		{Name: "inject.example.io", FailurePolicy: &fail},
		{Name: "inject-system.example.io", FailurePolicy: &ignore},
	}
	two := []WebhookMatch{
		{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
		{ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"c": "d"}}, Condition: "true"},
	}
	got := ExpandWebhooks(templates, two, []string{"sidecarset-system", "infra"})
	var names []string
	for _, w := range got {
		names = append(names, fmt.Sprintf("%s/%s/%d", w.Name, *w.FailurePolicy, len(w.MatchConditions)))
	}
	want := "inject.example.io/Fail/0 1.inject.example.io/Fail/1 inject-system.example.io/Ignore/0 1.inject-system.example.io/Ignore/1"
	if strings.Join(names, " ") != want {
		t.Errorf("expanded: %s\nwant:     %s", strings.Join(names, " "), want)
	}
	namespaces := []struct {
		labels   labels.Set
		selected bool
	}{
		{labels.Set{corev1.LabelMetadataName: "sidecarset-system"}, false},
		{labels.Set{corev1.LabelMetadataName: "infra"}, false},
		{labels.Set{corev1.LabelMetadataName: "default"}, true},
		{labels.Set{corev1.LabelMetadataName: "kruise", "control-plane": "controller-manager"}, false}, // as OpenKruise's webhook
		{labels.Set{corev1.LabelMetadataName: "ops", "control-plane": ""}, false},
		{labels.Set{corev1.LabelMetadataName: "shop", "tier": "control-plane"}, true},
	}
	for _, w := range got {
		sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			t.Fatal(err)
		}
		for _, ns := range namespaces {
			if sel.Matches(ns.labels) != ns.selected {
				t.Errorf("webhook %s selects namespace %v: %v, want %v (%v)", w.Name, ns.labels, !ns.selected, ns.selected, w.NamespaceSelector)
			}
		}
	}
	again := ExpandWebhooks(got, []WebhookMatch{{}}, []string{"sidecarset-system", "infra"})
	if n := len(again[0].NamespaceSelector.MatchExpressions); n != 2 {
		t.Errorf("expanding again adds an exclusion again: %d requirements, want 2", n)
	}
	if len(again) != 2 || again[0].Name != "inject.example.io" || again[1].Name != "inject-system.example.io" || len(again[0].ObjectSelector.MatchLabels) != 0 {
		t.Errorf("expanding an expanded configuration again: %+v", again)
	}
}
