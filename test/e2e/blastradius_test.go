package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestShippedObjectsBoundedBlastRadius deletes each admission object this project ships, in turn
// (the webhook template, the active webhook configuration, each guard policy and binding), as an
// uninstall in the wrong order or a hand delete would, and checks that another product's webhook
// configuration can still be created, updated and deleted by an administrator: no guard refuses
// requests it does not concern, whatever is missing. Each object is put back afterwards.
func TestShippedObjectsBoundedBlastRadius(t *testing.T) {
	ctx := context.Background()
	ar := kube.AdmissionregistrationV1()
	type shipped struct {
		kind, name string
		remove     func() (restore func() error, err error)
	}
	webhookConfig := func(name string) func() (func() error, error) {
		return func() (func() error, error) {
			saved, err := ar.MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			saved.ResourceVersion, saved.UID = "", ""
			return func() error {
				_, err := ar.MutatingWebhookConfigurations().Create(ctx, saved, metav1.CreateOptions{})
				return ignoreExists(err)
			}, ar.MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	policy := func(name string) func() (func() error, error) {
		return func() (func() error, error) {
			saved, err := ar.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			saved.ResourceVersion, saved.UID = "", ""
			return func() error {
				_, err := ar.ValidatingAdmissionPolicies().Create(ctx, saved, metav1.CreateOptions{})
				return ignoreExists(err)
			}, ar.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	binding := func(name string) func() (func() error, error) {
		return func() (func() error, error) {
			saved, err := ar.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			saved.ResourceVersion, saved.UID = "", ""
			return func() error {
				_, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, saved, metav1.CreateOptions{})
				return ignoreExists(err)
			}, ar.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	objects := []shipped{
		{"MutatingWebhookConfiguration", "sidecarset-injector", webhookConfig("sidecarset-injector")},
		{"MutatingWebhookConfiguration", "sidecarset-injector-active", webhookConfig("sidecarset-injector-active")},
		{"ValidatingAdmissionPolicy", "sidecarset-apiserver-webhook-guard", policy("sidecarset-apiserver-webhook-guard")},
		{"ValidatingAdmissionPolicyBinding", "sidecarset-apiserver-webhook-guard", binding("sidecarset-apiserver-webhook-guard")},
		{"ValidatingAdmissionPolicy", "sidecarset-apiserver-webhook-scope", policy("sidecarset-apiserver-webhook-scope")},
		{"ValidatingAdmissionPolicyBinding", "sidecarset-apiserver-webhook-scope", binding("sidecarset-apiserver-webhook-scope")},
		{"ValidatingAdmissionPolicy", "sidecarset-apiserver-pod-guard", policy("sidecarset-apiserver-pod-guard")},
		{"ValidatingAdmissionPolicyBinding", "sidecarset-apiserver-pod-guard", binding("sidecarset-apiserver-pod-guard")},
	}
	for _, o := range objects {
		t.Run(o.kind+"/"+o.name, func(t *testing.T) {
			restore, err := o.remove()
			if err != nil {
				t.Fatalf("deleting %s %s: %v", o.kind, o.name, err)
			}
			defer func() {
				if err := restore(); err != nil {
					t.Errorf("putting %s %s back: %v", o.kind, o.name, err)
				}
			}()
			// Policies take a moment to be (un)loaded: another product's writes must pass the whole
			// time, so try them over a few seconds.
			consistently(t, fmt.Sprintf("another product's webhook configuration writes with %s %s missing", o.kind, o.name), time.Second, 3*time.Second,
				func(ctx context.Context) (bool, string) {
					if err := otherProductWrites(ctx); err != nil {
						return false, err.Error()
					}
					return true, ""
				})
		})
	}
}

// otherProductWrites creates, updates and deletes a webhook configuration of another product as
// cluster administrator. Its one webhook selects no pod and ignores failures.
func otherProductWrites(ctx context.Context) error {
	client := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	none := admissionregistrationv1.SideEffectClassNone
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "e2e-other-product"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "other.e2e.example.com",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/mutate")},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-other-product": "never"}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		}}}
	_ = client.Delete(ctx, cfg.Name, metav1.DeleteOptions{})
	created, err := client.Create(ctx, cfg, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	created.Labels = map[string]string{"e2e": "updated"}
	if _, err := client.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if err := client.Delete(ctx, cfg.Name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
