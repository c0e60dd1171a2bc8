package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
)

// tenantSet is the SidecarSet a NamespacedSidecarSet (doc, without metadata) named name in
// namespace ns takes part as.
func tenantSet(t testing.TB, ns, name, doc string) *v1alpha1.SidecarSet {
	t.Helper()
	n := &v1alpha1.NamespacedSidecarSet{}
	if err := yaml.UnmarshalStrict([]byte(doc), n); err != nil {
		t.Fatal(err)
	}
	n.Name, n.Namespace = name, ns
	return prepare(t, n.AsSidecarSet())
}

// webhookTemplates are the two classes of namespace of the shipped configuration.
var webhookTemplates = []admissionregistrationv1.MutatingWebhook{
	{Name: "inject.example.io", NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}}}},
	{Name: "inject-system.example.io", NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{"kube-system"}}}}},
}

// serverCalls returns how many webhooks of the planned configuration call the server for pod in
// ns, as kube-apiserver decides: namespaceSelector and objectSelector natively, then the match
// conditions.
func serverCalls(t testing.TB, plan Plan, pod *corev1.Pod, ns *corev1.Namespace) int {
	t.Helper()
	pod = pod.DeepCopy()
	pod.Namespace = ns.Name
	calls := 0
	for _, w := range webhookconfig.ExpandWebhooks(webhookTemplates, plan.WebhookMatches, nil) {
		if !selectorMatches(t, w.NamespaceSelector, ns.Labels) || !selectorMatches(t, w.ObjectSelector, pod.Labels) {
			continue
		}
		holds := true
		for _, c := range w.MatchConditions {
			holds = holds && policytest.ConditionHolds(t, c.Expression, pod)
		}
		if holds {
			calls++
		}
	}
	return calls
}

func selectorMatches(t testing.TB, sel *metav1.LabelSelector, set map[string]string) bool {
	t.Helper()
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %v: %v", sel, err)
	}
	return s.Matches(labels.Set(set))
}

// admitted is the pod kube-apiserver creates with the plan of sets in place: the policies in
// name order, then the webhook (the injector with SkipInjected) when one of its webhooks
// receives the pod.
func admitted(t testing.TB, sets []*v1alpha1.SidecarSet, pod *corev1.Pod, ns *corev1.Namespace) *corev1.Pod {
	t.Helper()
	out, _ := admittedBy(t, PlanInput{SidecarSets: sets, Now: testStamp}, pod, ns)
	return out
}

// admittedBy is admitted with the plan of in; it also says whether the pod called the server.
func admittedBy(t testing.TB, in PlanInput, pod *corev1.Pod, ns *corev1.Namespace) (*corev1.Pod, bool) {
	t.Helper()
	sets := in.SidecarSets
	plan, err := PlanPolicies(in)
	if err != nil {
		t.Fatal(err)
	}
	pod = pod.DeepCopy()
	pod.Namespace = ns.Name
	var policies []*compiledPolicy
	for _, p := range plan.Policies {
		policies = append(policies, compilePolicy(t, p))
	}
	out := runAll(t, policies, identity(len(policies)), pod, ns)
	if serverCalls(t, plan, out, ns) == 0 {
		return out, false
	}
	res, err := injection.Inject(injection.Input{Pod: out, Namespace: ns.Name, NamespaceLabels: ns.Labels, SidecarSets: sets, Now: testStamp,
		Options: injection.Options{SkipInjected: true}})
	if err != nil {
		t.Fatalf("webhook: %v", err)
	}
	return res.Pod, true
}

// TestTenantNamesStayInNamespace: whatever containers a NamespacedSidecarSet names, a pod of
// another namespace is created as the injector alone makes it (the probe of a tenant stripping a
// cluster sidecar from other namespaces' pods), and so is a pod of its own namespace; the same
// holds for a cluster neighbour selecting by another label key.
func TestTenantNamesStayInNamespace(t *testing.T) {
	audit := mustSidecarSet(t, `
metadata: {name: audit-agent}
spec:
  selector: {matchLabels: {tier: web}}
  containers: [{name: audit, image: busybox}]
`)
	shareVolume := tenantSet(t, "team-a", "strip", `
spec:
  selector: {matchLabels: {never: "1"}}
  containers: [{name: app, image: busybox, shareVolumePolicy: {type: enabled}}]
`)
	earlyKey := tenantSet(t, "team-a", "strip2", `
spec:
  selector: {matchLabels: {aaa: x}}
  containers: [{name: app2, image: busybox}]
`)
	lateKey := tenantSet(t, "team-a", "strip3", `
spec:
  selector: {matchLabels: {zzz: x}}
  containers: [{name: app3, image: busybox, podInjectPolicy: AfterAppContainer}]
`)
	clusterEarlyKey := mustSidecarSet(t, `
metadata: {name: b-early}
spec:
  selector: {matchLabels: {aaa: x}}
  containers: [{name: app4, image: busybox}]
`)
	pod := func(l map[string]string) *corev1.Pod { return policytest.LabelledPod(l, "app2", "app3", "app4") }
	for _, tc := range []struct {
		name string
		sets []*v1alpha1.SidecarSet
	}{
		{"webhook-path tenant, another key", []*v1alpha1.SidecarSet{audit, shareVolume}},
		{"policy-path tenant, key sorting first", []*v1alpha1.SidecarSet{audit, earlyKey}},
		{"policy-path tenant, key sorting last", []*v1alpha1.SidecarSet{audit, lateKey}},
		{"all of them", []*v1alpha1.SidecarSet{audit, shareVolume, earlyKey, lateKey}},
		{"cluster neighbour, key sorting first", []*v1alpha1.SidecarSet{audit, clusterEarlyKey}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ns := range []*corev1.Namespace{namespace("team-b", nil), namespace("team-a", nil), namespace("kube-system", nil)} {
				for _, l := range []map[string]string{{"tier": "web"}, {"tier": "web", "aaa": "x"}, {"tier": "web", "zzz": "x", "never": "1"}} {
					p := pod(l)
					p.Namespace = ns.Name
					want := normalize(webhookPod(t, tc.sets, p, ns))
					if diff := cmp.Diff(want, normalize(admitted(t, tc.sets, p, ns))); diff != "" {
						t.Errorf("namespace %s, pod %v: differs from the injector alone (-injector +admitted):\n%s", ns.Name, l, diff)
					}
				}
			}
		})
	}
}

// TestTenantWebhookNeedsStayInNamespace: whatever a NamespacedSidecarSet selects, kube-apiserver
// sends no pod of another namespace to the server that it would not send without it.
func TestTenantWebhookNeedsStayInNamespace(t *testing.T) {
	audit := mustSidecarSet(t, `
metadata: {name: audit-agent}
spec:
  selector: {matchLabels: {tier: web}}
  containers: [{name: audit, image: busybox}]
`)
	keyless := tenantSet(t, "team-a", "everything", `
spec:
  selector: {matchExpressions: [{key: nothing, operator: DoesNotExist}]}
  containers: [{name: app, image: busybox, shareVolumePolicy: {type: enabled}}]
`)
	keyed := tenantSet(t, "team-a", "keyed", `
spec:
  selector: {matchLabels: {tier: web}}
  containers: [{name: envoy, image: busybox, shareVolumePolicy: {type: enabled}}]
`)
	policyPath := tenantSet(t, "team-a", "named", `
spec:
  selector: {matchLabels: {aaa: x}}
  containers: [{name: app, image: busybox}]
`)
	pods := []*corev1.Pod{policytest.LabelledPod(nil), policytest.LabelledPod(map[string]string{"tier": "web"}), policytest.LabelledPod(map[string]string{"aaa": "x"}, "app", "envoy"),
		policytest.LabelledPod(map[string]string{"tier": "web"}, "audit"), policytest.LabelledPod(map[string]string{"tier": "web", "aaa": "x"}, "app")}
	base, err := PlanPolicies(PlanInput{SidecarSets: []*v1alpha1.SidecarSet{audit}, Now: testStamp})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		tenants []*v1alpha1.SidecarSet
	}{
		{"a selector requiring no label", []*v1alpha1.SidecarSet{keyless}},
		{"the cluster SidecarSet's label, webhook path", []*v1alpha1.SidecarSet{keyed}},
		{"a policy-path tenant naming the pods' containers", []*v1alpha1.SidecarSet{policyPath}},
		{"all of them", []*v1alpha1.SidecarSet{keyless, keyed, policyPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := PlanPolicies(PlanInput{SidecarSets: append([]*v1alpha1.SidecarSet{audit}, tc.tenants...), Now: testStamp})
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range []*corev1.Namespace{namespace("team-b", nil), namespace("kube-system", nil)} {
				for _, p := range pods {
					if got, want := serverCalls(t, plan, p, ns), serverCalls(t, base, p, ns); got != want {
						t.Errorf("namespace %s, pod %v %d containers: %d calls of the server, want %d as without tenants", ns.Name, p.Labels, len(p.Spec.Containers), got, want)
					}
				}
			}
			if n := serverCalls(t, plan, policytest.LabelledPod(nil), namespace("team-a", nil)); n == 0 && tc.tenants[0] == keyless {
				t.Errorf("a pod of team-a does not reach the server its NamespacedSidecarSet needs")
			}
		})
	}
}

// TestTenantsDoNotMoveClusterSidecarSets: no NamespacedSidecarSets change the path, reason or
// policy of a cluster SidecarSet (neighbour count, ambiguous names, the label value budget, group
// room).
func TestTenantsDoNotMoveClusterSidecarSets(t *testing.T) {
	audit := mustSidecarSet(t, `
metadata: {name: audit-agent}
spec:
  selector: {matchLabels: {tier: web}}
  containers: [{name: audit, image: busybox}]
`)
	mesh := mustSidecarSet(t, `
metadata: {name: mesh}
spec:
  selector: {matchExpressions: [{key: app, operator: In, values: [v000]}]}
  containers: [{name: proxy, image: busybox}]
`)
	clusterSets := []*v1alpha1.SidecarSet{audit, mesh}
	tenants := func(n int, ns string, doc func(i int) string) []*v1alpha1.SidecarSet {
		var out []*v1alpha1.SidecarSet
		for i := 0; i < n; i++ {
			out = append(out, tenantSet(t, ns, fmt.Sprintf("t%02d", i), doc(i)))
		}
		return out
	}
	values := "[" + strings.Join(manyValues(maxNativeValues), ", ") + "]"
	for _, tc := range []struct {
		name    string
		tenants []*v1alpha1.SidecarSet
	}{
		{"more neighbours than a policy places among", tenants(neighbour.MaxNeighbours+1, "team-a", func(i int) string {
			return fmt.Sprintf("spec:\n  selector: {matchLabels: {k%d: x}}\n  containers: [{name: c%d, image: busybox}]\n", i, i)
		})},
		{"ambiguous container names", tenants(2, "team-a", func(i int) string {
			return "spec:\n  selector: {matchLabels: {tier: web}}\n  containers: [{name: shared, image: busybox}]\n"
		})},
		{"the label value budget", tenants(3, "team-a", func(i int) string {
			return fmt.Sprintf("spec:\n  selector: {matchExpressions: [{key: app, operator: In, values: %s}]}\n  containers: [{name: c%d, image: busybox}]\n", values, i)
		})},
		{"group room", tenants(celpatch.MaxMembers+1, "team-a", func(i int) string {
			return fmt.Sprintf("spec:\n  selector: {matchLabels: {tier: web}}\n  containers: [{name: c%d, image: busybox}]\n", i)
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, err := PlanPolicies(PlanInput{SidecarSets: clusterSets, Now: testStamp})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := PlanPolicies(PlanInput{SidecarSets: append(append([]*v1alpha1.SidecarSet(nil), clusterSets...), tc.tenants...), Now: testStamp})
			if err != nil {
				t.Fatal(err)
			}
			for _, ss := range clusterSets {
				want, got := base.Results[ss.Name], plan.Results[ss.Name]
				want.Message, got.Message = "", ""
				if got != want {
					t.Errorf("%s: %+v, want %+v as without tenants", ss.Name, got, want)
				}
			}
		})
	}
}

// TestTenantConditionsFitApart: when the namespaces' needs together outgrow the webhook's match
// condition, the namespaces that need the most room receive all their pods, and the others keep
// their own terms: NamespacedSidecarSets crowding many namespaces never send the pods of a quiet
// namespace (or of a namespace without any) to the server.
func TestTenantConditionsFitApart(t *testing.T) {
	const crowded, perNamespace = 30, 70
	var sets []*v1alpha1.SidecarSet
	value := func(ns, i int) string { return fmt.Sprintf("v%02d-%03d-%s", ns, i, strings.Repeat("x", 40)) }
	for ns := range crowded {
		for i := range perNamespace {
			sets = append(sets, tenantSet(t, fmt.Sprintf("crowd-%02d", ns), fmt.Sprintf("s%03d", i), fmt.Sprintf(`
spec:
  selector: {matchLabels: {app: %s}}
  containers: [{name: c%03d, image: busybox}]
`, value(ns, i), i)))
		}
	}
	sets = append(sets, tenantSet(t, "quiet", "web", `
spec:
  selector: {matchLabels: {app: web}}
  containers: [{name: web-agent, image: busybox}]
`))
	plan, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: testStamp, WebhookOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	conditions := 0
	for _, m := range plan.WebhookMatches {
		if m.Condition != "" {
			conditions++
			if len(m.Condition) > webhookconfig.MaxConditionSize {
				t.Errorf("a condition of %d characters, more than %d", len(m.Condition), webhookconfig.MaxConditionSize)
			}
		}
	}
	if conditions == 0 {
		t.Fatal("no webhook has a match condition: every pod of every tenant namespace calls the server")
	}
	for _, tc := range []struct {
		ns    string
		pod   *corev1.Pod
		calls bool
	}{
		{"quiet", policytest.LabelledPod(map[string]string{"app": "web"}), true},
		{"quiet", policytest.LabelledPod(map[string]string{"app": "other"}), false},
		{"quiet", policytest.LabelledPod(map[string]string{"app": value(0, 0)}), false},
		{"elsewhere", policytest.LabelledPod(map[string]string{"app": value(0, 0)}), false},
		{"crowd-00", policytest.LabelledPod(map[string]string{"app": value(0, 0)}), true},
		{"crowd-29", policytest.LabelledPod(map[string]string{"app": value(29, perNamespace-1)}), true},
	} {
		if got := serverCalls(t, plan, tc.pod, namespace(tc.ns, nil)) > 0; got != tc.calls {
			t.Errorf("namespace %s, pod %v: calls the server %v, want %v", tc.ns, tc.pod.Labels, got, tc.calls)
		}
	}
}
