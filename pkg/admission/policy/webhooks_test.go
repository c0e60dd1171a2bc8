package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// webhooksCalled returns how many of the webhooks of matches call the server for pod, as
// kube-apiserver decides: the objectSelector natively (an empty one selects every pod), then the
// match condition with its CEL machinery, compiled as it validates webhooks.
func webhooksCalled(t testing.TB, matches []WebhookMatch, pod *corev1.Pod) int {
	t.Helper()
	called := 0
	for _, m := range matches {
		sel := labels.Everything()
		if m.ObjectSelector != nil {
			var err error
			if sel, err = metav1.LabelSelectorAsSelector(m.ObjectSelector); err != nil {
				t.Fatalf("objectSelector: %v", err)
			}
		}
		if !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if m.Condition == "" || conditionHolds(t, m.Condition, pod) {
			called++
		}
	}
	return called
}

func conditionHolds(t testing.TB, expr string, pod *corev1.Pod) bool {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	cond := compiler.CompileCondition([]plugincel.ExpressionAccessor{&matchconditions.MatchCondition{Name: "c", Expression: expr}},
		plugincel.OptionalVariableDeclarations{}, environment.NewExpressions)
	if errs := cond.CompilationErrors(); len(errs) > 0 {
		t.Fatalf("condition does not compile: %v\n%s", errs, expr)
	}
	fail := admissionregistrationv1.Fail
	attrs := admission.NewAttributesRecord(pod, nil, podGVK, pod.Namespace, pod.Name, podGVR, "", admission.Create, &metav1.CreateOptions{}, false, nil)
	va := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: podGVK, VersionedObject: pod}
	r := matchconditions.NewMatcher(cond, &fail, "webhook", "mutate", "w").Match(compiler.CreateContext(context.Background()), va, nil, nil)
	if r.Error != nil {
		t.Fatalf("condition: %v", r.Error)
	}
	return r.Matches
}

func labelled(l map[string]string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: l}}
	for _, c := range append([]string{"app"}, containers...) {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "nginx"})
	}
	return pod
}

func selecting(t testing.TB, name, selector, container string) *v1alpha1.SidecarSet {
	return mustSidecarSet(t, fmt.Sprintf("metadata: {name: %s}\nspec:\n  selector: %s\n  containers: [{name: %s, image: busybox}]\n", name, selector, container))
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
		{"nothing stored", nil, nil, []pod{{labelled(nil), 0}, {labelled(map[string]string{"app": "web"}), 0}}, 1, 0},
		{"webhook path only: selectors, no CEL", []*v1alpha1.SidecarSet{app, tier, team}, nil, []pod{
			{labelled(nil), 0},
			{labelled(map[string]string{"app": "web"}), 1},
			{labelled(map[string]string{"app": "db"}), 0},
			{labelled(map[string]string{"tier": "back", "app": "web", "team": "x"}), 1},
			{labelled(map[string]string{"tier": "middle", "team": "x"}), 1},
			{labelled(map[string]string{"tier": "middle"}), 0},
		}, 3, 0},
		{"policy path only: declared names of pods a policy may select", nil, []*v1alpha1.SidecarSet{app, tier}, []pod{
			{labelled(map[string]string{"app": "web"}), 0},
			{labelled(map[string]string{"app": "web"}, "log"), 1},
			{labelled(map[string]string{"app": "web"}, "proxy"), 1},
			{labelled(map[string]string{"app": "db"}, "log"), 0},
			{labelled(nil, "log"), 0},
			{labelled(map[string]string{"tier": "front"}, "proxy"), 1},
		}, 2, 2},
		{"both paths", []*v1alpha1.SidecarSet{tier}, []*v1alpha1.SidecarSet{app}, []pod{
			{labelled(map[string]string{"app": "web"}), 0},
			{labelled(map[string]string{"app": "web", "tier": "front"}), 1},
			{labelled(map[string]string{"tier": "front"}), 1},
			{labelled(map[string]string{"app": "web"}, "log"), 1},
		}, 2, 1},
		{"a selector requiring no label: one webhook", []*v1alpha1.SidecarSet{anyPod}, []*v1alpha1.SidecarSet{app}, []pod{
			{labelled(nil), 1}, {labelled(map[string]string{"app": "web"}), 1},
		}, 1, 0},
		{"more keys than webhooks: one with a condition", many, nil, []pod{
			{labelled(nil), 0}, {labelled(map[string]string{"k3": "v"}), 1}, {labelled(map[string]string{"k3": "w"}), 0},
		}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			matches, _ := webhookMatches(tc.webhook, tc.policy, nil)
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
			_, got := webhookMatches(tc.webhook, tc.policy, nil)
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

// TestWebhookOfAKeyMostlyOnTheWebhook: when most values of a label key are served by the webhook
// (10,000 one-key SidecarSets, the group policies holding the first 128 values), the webhook of
// the key still spares the server the pods of the policy-path values: its match condition
// names the few values the webhook does not serve rather than the many it does, which would be
// too large a condition (the webhook would then receive every pod with the key).
func TestWebhookOfAKeyMostlyOnTheWebhook(t *testing.T) {
	sets := policytest.BenchSidecarSets("onekey", 10000)
	for _, ss := range sets { // as the server stores them
		ss.Status.LatestRevision = ss.Name + "-1"
		ss.Annotations = map[string]string{sidecar.HashAnnotation: "h-" + ss.Name, sidecar.HashWithoutImageAnnotation: "w-" + ss.Name}
	}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	first, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now, Grace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	compiled, bound, loaded := map[string]*admissionregistrationv1.MutatingAdmissionPolicy{}, map[string]bool{}, map[string]time.Time{}
	for _, p := range first.Policies {
		compiled[p.Name], bound[p.Name], loaded[p.Name] = p, true, now
	}
	later := now.Add(time.Minute) // the policies loaded, their grace period over
	p, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: later, Grace: 10 * time.Second, Compiled: compiled, Bound: bound, Loaded: loaded})
	if err != nil {
		t.Fatal(err)
	}
	policyValue, webhookValue := "", ""
	for _, ss := range sets[5:] {
		v := ss.Spec.Selector.MatchLabels["bench"]
		switch p.Results[ss.Name].Path {
		case apps.PathPolicy:
			policyValue = v
		case apps.PathWebhook:
			webhookValue = v
		}
	}
	if policyValue == "" || webhookValue == "" {
		t.Fatalf("the shape has no value on one of the paths (policy %q, webhook %q)", policyValue, webhookValue)
	}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int
	}{
		{labelled(map[string]string{"bench": "five"}), 0},
		{labelled(map[string]string{"bench": policyValue}), 0},
		{labelled(map[string]string{"bench": "five"}, "five-0"), 1}, // declares a policy-path sidecar: the injector replaces it
		{labelled(map[string]string{"bench": webhookValue}), 1},
		{labelled(map[string]string{"other": "x"}), 0},
	} {
		if got := webhooksCalled(t, p.WebhookMatches, tc.pod); got != tc.want {
			t.Errorf("pod %v with containers %d: %d webhooks call the server, want %d", tc.pod.Labels, len(tc.pod.Spec.Containers), got, tc.want)
		}
	}
}
