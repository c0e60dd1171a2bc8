package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
)

// TestServerGuard: the local cluster runs the server with the shipped ServiceAccount, under the
// shipped guards (artifacts/deploy/base/server-guard.yaml, and the static policy of
// artifacts/deploy/static that kube-apiserver loads). With the server's own token, an admission
// policy it does not own cannot be written, nor a webhook configuration other than its own, nor
// where its webhooks send pods, nor have one fail open but an intake webhook; what the server
// does write (its labelled policies, its webhooks' selectors, intake webhooks) is allowed. The
// rest of the suite runs under the same guards.
func TestServerGuard(t *testing.T) {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(localState(), "server.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	server := kubernetes.NewForConfigOrDie(cfg)
	// hack/local-up.sh applies the webhook guard at registration; a test that uninstalled the
	// deployment (and the guard with it) and registered the local server again may have left it
	// just re-created: applying it again is a no-op then.
	if out, err := runKubectl(t, "", "get", "validatingadmissionpolicy,validatingadmissionpolicybinding", "sidecarset-apiserver-webhook-guard", "-o", "name"); err != nil {
		t.Logf("the webhook guard was not in place: %v\n%s", err, out)
	}
	if out, err := runKubectl(t, "", "apply", "-f", filepath.Join(root, "artifacts", "deploy", "base", "server-guard.yaml")); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	refused := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("with the server's token, %s: want refused (%q), got %v", what, want, err)
		}
	}

	// Admission policies: only its own, named and labelled as it names and labels them.
	foreign := guardTestPolicy("e2e-not-the-servers", nil)
	_, err = server.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, foreign, dryRun)
	refused("create an unlabelled MutatingAdmissionPolicy", err, "writes only the admission policies and bindings it owns")
	_, err = server.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx,
		guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", nil), dryRun)
	refused("create an unlabelled sidecarsets-* MutatingAdmissionPolicy", err, "writes only the admission policies and bindings it owns")
	owned := guardTestPolicy(apps.PolicyNamePrefix+"e2e-guard", map[string]string{apps.ManagedByLabel: apps.ManagedByValue})
	if _, err := server.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, owned, dryRun); err != nil {
		t.Errorf("with the server's token, create a policy it owns: %v", err)
	}
	if _, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, foreign, dryRun); err != nil {
		t.Errorf("an administrator's policy is refused: the guard must hold the server only: %v", err)
	}

	// Webhook configurations: its own three, and in them the selectors only. The leader writes both
	// configurations at any time (selectors, holds dropped): each dry-run update reads the
	// configuration afresh and is tried again on a conflict.
	activeName := injectionsync.ActiveWebhooks("sidecarset-injector")
	active, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, activeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	update := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	dryUpdate := func(name string, mutate func(*admissionregistrationv1.MutatingWebhookConfiguration)) error {
		return retry.OnError(guardRetry, apierrors.IsConflict, func() error {
			cur, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mutate(cur)
			_, err = server.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, cur, update)
			return err
		})
	}
	if err := dryUpdate(activeName, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		c.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-guard": "x"}}
	}); err != nil {
		t.Errorf("with the server's token, change a webhook's objectSelector: %v", err)
	}
	// kube-apiserver takes a moment to load a policy (re)applied at registration, and its parameter.
	// refused reports what the last try returned.
	_, _ = poll(time.Minute, func(ctx context.Context) (bool, string) {
		err = dryUpdate(activeName, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service.Path = ptr.To("/elsewhere")
		})
		return err != nil, ""
	})
	refused("send a webhook's pods elsewhere", err, "never where they send pods")
	err = dryUpdate(activeName, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		c.Webhooks[0].Rules[0].Operations = append(c.Webhooks[0].Rules[0].Operations, admissionregistrationv1.Update)
	})
	refused("widen what a webhook receives", err, "never where they send pods")
	err = dryUpdate(activeName, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
	})
	refused("have a webhook fail open", err, "never where they send pods")
	selective, _ := webhookconfig.SplitIntake(active.Webhooks)
	if err := dryUpdate(activeName, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
		sel, _ := webhookconfig.SplitIntake(c.Webhooks)
		c.Webhooks = append(sel, webhookconfig.IntakeWebhooks(sel[:1], nil, nil)...)
	}); err != nil {
		t.Errorf("with the server's token, add an intake webhook that fails open: %v", err)
	}
	// Its intake configuration: created (here, or already, by a write) with intake webhooks.
	intakeCfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: injectionsync.IntakeWebhooks("sidecarset-injector"),
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}}, Webhooks: webhookconfig.IntakeWebhooks(selective[:1], nil, nil)}
	if _, err := server.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, intakeCfg, dryRun); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Errorf("with the server's token, create its intake webhook configuration: %v", err)
	}
	// and left without webhooks once the leader drops the last hold (the leader creates it at its
	// start).
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, intakeCfg.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the leader did not create its intake webhook configuration: %v", err)
	} else {
		if err := dryUpdate(intakeCfg.Name, func(c *admissionregistrationv1.MutatingWebhookConfiguration) { c.Webhooks = nil }); err != nil {
			t.Errorf("with the server's token, remove every intake webhook: %v", err)
		}
		err = dryUpdate(intakeCfg.Name, func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks = webhookconfig.IntakeWebhooks(selective[:1], nil, nil)
			c.Webhooks[0].ClientConfig.Service.Path = ptr.To("/elsewhere")
		})
		refused("send an intake webhook's pods elsewhere", err, "never where they send pods")
	}
	other := active.DeepCopy()
	other.ObjectMeta = metav1.ObjectMeta{Name: "e2e-not-the-servers"}
	_, err = server.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, other, dryRun)
	refused("create another, unlabelled webhook configuration", err, "creates only webhook configurations labelled")
	other.Labels = map[string]string{apps.ManagedByLabel: apps.ManagedByValue}
	_, err = server.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, other, dryRun)
	refused("create another, labelled webhook configuration", err, "writes only its webhook configurations")
	err = server.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, active.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	refused("delete its webhook configuration", err, "forbidden") // RBAC refuses it before the guard would
}

// guardRetry spaces the tries of a dry-run update that met a concurrent write.
var guardRetry = wait.Backoff{Steps: 20, Duration: 50 * time.Millisecond, Factor: 1.5, Cap: time.Second}

// guardTestPolicy is a minimal MutatingAdmissionPolicy of the shape the server writes: it labels
// pods at their creation.
func guardTestPolicy(name string, labels map[string]string) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{
					Expression: `Object{metadata: Object.metadata{labels: {"e2e-guard": "x"}}}`}}},
		},
	}
}
