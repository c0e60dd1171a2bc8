package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestAnotherMutationKeepsItsEdits adds a second mutating admission step, a cluster
// MutatingAdmissionPolicy that adds an env var to the manual's sidecar1 whenever it is in the pod
// (reinvoked as needed), and creates a pod in both injection modes: the pod gets exactly one
// sidecar1, carrying the other step's env var, whatever order kube-apiserver runs them in. In
// policy mode the policy that injects sidecar1 runs once per pod create, although the other
// step's mutation makes kube-apiserver pass over the admission chain a second time.
func TestAnotherMutationKeepsItsEdits(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	applyManualExample(t)
	editor := editingPolicy()
	ar := kube.AdmissionregistrationV1()
	if _, err := ar.MutatingAdmissionPolicies().Create(ctx, editor, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: editor.Name},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: editor.Name}}
	if _, err := ar.MutatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ar.MutatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = ar.MutatingAdmissionPolicies().Delete(ctx, editor.Name, metav1.DeleteOptions{})
	})
	defer restartServer(t, "policy")
	for _, mode := range []string{"webhook", "policy"} {
		t.Run(mode, func(t *testing.T) {
			restartServer(t, mode)
			waitSettled(t, "test-sidecarset")
			if mode == "webhook" {
				checkInjectionPath(t, "test-sidecarset", apps.PathWebhook, apps.ReasonWebhookMode)
			} else {
				checkInjectionPath(t, "test-sidecarset", apps.PathPolicy, apps.ReasonCompiled)
			}
			got := waitInjected(t, nginxPod("default", "edited"), "sidecar1")
			var sidecars []corev1.Container
			for _, c := range got.Spec.Containers {
				if c.Name == "sidecar1" {
					sidecars = append(sidecars, c)
				}
			}
			if len(sidecars) != 1 {
				t.Fatalf("%d sidecar1 containers, want 1", len(sidecars))
			}
			found := false
			for _, e := range sidecars[0].Env {
				found = found || (e.Name == "EDITED_BY" && e.Value == "another-step")
			}
			if !found {
				t.Fatalf("the other admission step's env var is gone: %+v", sidecars[0].Env)
			}
			if mode == "policy" {
				checkPolicyRunsOnce(t, "test-sidecarset", nginxPod("default", "edited"))
			}
		})
	}
}

// editingPolicy adds EDITED_BY=another-step to container sidecar1 when the pod has it and lacks
// the var. It matches every pod (no matchConditions): kube-apiserver reinvokes only policies that
// matched in the first pass, and sidecar1 appears only after this policy's first pass when the
// webhook, or a policy ordered after it, injects it.
func editingPolicy() *admissionregistrationv1.MutatingAdmissionPolicy {
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	fail := admissionregistrationv1.Fail
	scope := admissionregistrationv1.AllScopes
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-edit-sidecar1"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
				},
			}}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
				Expression: `object.spec.containers.exists(c, c.name == "sidecar1" && !c.?env.orValue([]).exists(e, e.name == "EDITED_BY")) ? [JSONPatch{op: "add", path: "/spec/containers/" + string(object.spec.containers.map(c, c.name).indexOf("sidecar1")) + "/env/-", value: Object.spec.containers.env{name: "EDITED_BY", value: "another-step"}}] : []`,
			}}},
			FailurePolicy:      &fail,
			ReinvocationPolicy: ifNeeded,
		},
	}
}

// checkPolicyRunsOnce creates pod (dry run) a few times and checks that kube-apiserver ran the
// mutations of the admission policy serving the SidecarSet named name once per create
// (apiserver_mutating_admission_policy_check_total counts each run of each mutation): not again
// in its second pass over the admission chain, where they would only add nothing at the cost of
// converting, patching and decoding the pod once more.
func checkPolicyRunsOnce(t *testing.T, name string, pod *corev1.Pod) {
	t.Helper()
	policy := servingPolicy(t, name)
	if len(policy.Spec.MatchConditions) > 0 {
		// A second run would stop at its match conditions (the SidecarSet injected already) and
		// count nothing: the count could not tell.
		t.Fatalf("policy %s has match conditions: the check needs a policy its objectSelector alone applies", policy.Name)
	}
	// kube-apiserver loads a policy some time after it is written; until then the webhook (the
	// intake) injects the pod.
	eventually(t, "kube-apiserver running policy "+policy.Name, time.Minute, func(context.Context) (bool, string) {
		before := policyChecks(t, policy.Name)
		if _, err := createPodDryRun(pod); err != nil {
			return false, err.Error()
		}
		return policyChecks(t, policy.Name) > before, "the policy did not run for a pod create"
	})
	before := policyChecks(t, policy.Name)
	const creates = 5
	for range creates {
		if _, err := createPodDryRun(pod); err != nil {
			t.Fatal(err)
		}
	}
	// A create retried inside createPodDryRun, or another pod of the label created meanwhile, may
	// add a run; a second run of every create doubles the count.
	if got, want := policyChecks(t, policy.Name)-before, creates*len(policy.Spec.Mutations); got < want || got >= 2*want {
		t.Errorf("%d pod creates ran the %d mutations of policy %s %d times, want %d (once per create)",
			creates, len(policy.Spec.Mutations), policy.Name, got, want)
	}
}

// servingPolicy returns the admission policy the /rollout view of the SidecarSet named name says
// serves it (checkInjectionPath has waited for the policy path).
func servingPolicy(t *testing.T, name string) *admissionregistrationv1.MutatingAdmissionPolicy {
	t.Helper()
	ctx := context.Background()
	view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if view.Status.Injection == nil || view.Status.Injection.Policy == "" {
		t.Fatalf("the /rollout view of %s names no policy: %+v", name, view.Status.Injection)
	}
	p, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, view.Status.Injection.Policy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// policyChecks sums kube-apiserver's apiserver_mutating_admission_policy_check_total of policy.
func policyChecks(t *testing.T, policy string) int {
	t.Helper()
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_mutating_admission_policy_check_total{") || !strings.Contains(line, `policy="`+policy+`"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		sum += v
	}
	return int(sum)
}
