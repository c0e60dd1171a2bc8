package e2e

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestRefusedPolicyWriteIsIsolated installs a ValidatingAdmissionPolicy that refuses the writes of
// one group policy, then creates two SidecarSets served by different group policies: the other
// one's policy is written, its generation observed and its pods injected; the refused one's
// generation is not reported observed, yet its pods are still injected (by the webhook). Once the
// refusal is lifted, its policy is written and its generation observed.
func TestRefusedPolicyWriteIsIsolated(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	ar := kube.AdmissionregistrationV1()
	const refused = "sidecarsets-isolation-refused-v0"
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "refuse-one-injection-policy"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"admissionregistration.k8s.io"}, APIVersions: []string{"v1"},
						Resources: []string{"mutatingadmissionpolicies"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != '" + refused + "'",
				Message: "refused by the isolation test"}},
		}}
	deny := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: vap.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: vap.Name, ValidationActions: deny}}
	if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, vap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lift := func() {
		_ = ar.ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
		_ = ar.ValidatingAdmissionPolicies().Delete(ctx, vap.Name, metav1.DeleteOptions{})
	}
	t.Cleanup(lift)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	// kube-apiserver loads the refusal asynchronously: wait until a dry run of the policy is refused.
	probe := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: refused},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[]"}}}}}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := ar.MutatingAdmissionPolicies().Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, nil
	}); err != nil {
		t.Fatalf("the refusal never took effect: %v", err)
	}
	create := func(name, key string) {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{key: "yes"}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name + "-sidecar", Image: "busybox:1.36"}}}}}
		if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("isolation-free", "isolation-free")
	create("isolation-blocked", "isolation-refused")
	waitSettled(t, "isolation-free")
	free := nginxPod("default", "isolation-free")
	free.Labels = map[string]string{"isolation-free": "yes"}
	waitInjected(t, free, "isolation-free-sidecar")
	if _, err := ar.MutatingAdmissionPolicies().Get(ctx, "sidecarsets-isolation-free-v0", metav1.GetOptions{}); err != nil {
		t.Errorf("the other SidecarSet's policy was not written: %v", err)
	}
	blocked := nginxPod("default", "isolation-blocked")
	blocked.Labels = map[string]string{"isolation-refused": "yes"}
	waitInjected(t, blocked, "isolation-blocked-sidecar")
	if ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "isolation-blocked", metav1.GetOptions{}); err != nil ||
		ss.Status.ObservedGeneration == ss.Generation {
		t.Errorf("the SidecarSet whose policy kube-apiserver refuses reports its generation observed (err %v)", err)
	}
	lift()
	waitSettled(t, "isolation-blocked")
	if _, err := ar.MutatingAdmissionPolicies().Get(ctx, refused, metav1.GetOptions{}); err != nil {
		t.Errorf("the refused policy was not written once allowed: %v", err)
	}
	waitInjected(t, blocked, "isolation-blocked-sidecar")
}
