package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
)

// TestRefusedPolicyWriteIsIsolated makes kube-apiserver refuse the writes of one group policy (an
// object this server does not own holds its name, which the static guard of artifacts/deploy/static
// also keeps the server from overwriting), then
// creates two SidecarSets served by different group policies: the other one's policy is written,
// its generation observed and its pods injected; the refused one's generation is not reported
// observed, yet its pods are still injected (by the webhook). Once the name is free, its policy is
// written and its generation observed.
func TestRefusedPolicyWriteIsIsolated(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	ar := kube.AdmissionregistrationV1()
	const refused = "sidecarsets-isolation-refused-v0"
	foreign := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: refused},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 'add', path: '/metadata/labels/probe', value: 'x'}]"}}}}}
	if _, err := ar.MutatingAdmissionPolicies().Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lift := func() { _ = ar.MutatingAdmissionPolicies().Delete(ctx, refused, metav1.DeleteOptions{}) }
	t.Cleanup(lift)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
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
	if p, err := ar.MutatingAdmissionPolicies().Get(ctx, refused, metav1.GetOptions{}); err != nil || p.Labels["app.kubernetes.io/managed-by"] != "sidecarset-apiserver" {
		t.Errorf("the refused policy was not written once its name was free: %v", err)
	}
	waitInjected(t, blocked, "isolation-blocked-sidecar")
}

// TestUninstallGarbageCollects: every policy and binding the server writes, and its webhook
// configurations (active and intake), are owned by its
// v1alpha1 APIService, so that deleting the deployment's objects (the server stopped, the
// APIService deleted) has the garbage collector delete them: no injection is left behind.
func TestUninstallGarbageCollects(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	applyManualExample(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	sel := metav1.ListOptions{LabelSelector: apps.ManagedByLabel + "=" + apps.ManagedByValue}
	ar := kube.AdmissionregistrationV1()
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices/v1alpha1.apps.kruise.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var apiService metav1.PartialObjectMetadata
	if err := json.Unmarshal(raw, &apiService); err != nil {
		t.Fatal(err)
	}
	policies, err := ar.MutatingAdmissionPolicies().List(ctx, sel)
	if err != nil || len(policies.Items) == 0 {
		t.Fatalf("no policy to collect: %v", err)
	}
	for _, p := range policies.Items {
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != apiService.UID {
			t.Errorf("policy %s owners %v, want the APIService %s", p.Name, p.OwnerReferences, apiService.UID)
		}
	}
	if w, err := ar.MutatingWebhookConfigurations().Get(ctx, "sidecarset-injector-active", metav1.GetOptions{}); err != nil ||
		len(w.OwnerReferences) != 1 || w.OwnerReferences[0].UID != apiService.UID {
		t.Errorf("the active webhook configuration (%v) is not owned by the APIService %s", err, apiService.UID)
	}
	// The intake configuration, which the manual's SidecarSet's write created.
	eventually(t, "the intake webhook configuration owned by the APIService", time.Minute, func(ctx context.Context) (bool, string) {
		w, err := ar.MutatingWebhookConfigurations().Get(ctx, injectionsync.IntakeWebhooks("sidecarset-injector"), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(w.OwnerReferences) == 1 && w.OwnerReferences[0].UID == apiService.UID, fmt.Sprintf("owners %v", w.OwnerReferences)
	})
	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := localUp("start-server"); err != nil {
			t.Error(err)
		}
		waitSettled(t, "test-sidecarset")
	}()
	if out, err := runKubectl(t, "", "delete", "apiservice", "v1alpha1.apps.kruise.io"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	eventually(t, "the garbage collector to delete the server's policies, bindings and webhooks", 2*time.Minute, func(ctx context.Context) (bool, string) {
		ps, err1 := ar.MutatingAdmissionPolicies().List(ctx, sel)
		bs, err2 := ar.MutatingAdmissionPolicyBindings().List(ctx, sel)
		ws, err3 := ar.MutatingWebhookConfigurations().List(ctx, sel)
		if err1 != nil || err2 != nil || err3 != nil {
			return false, fmt.Sprintf("list: %v; %v; %v", err1, err2, err3)
		}
		return len(ps.Items)+len(bs.Items)+len(ws.Items) == 0,
			fmt.Sprintf("%d policies, %d bindings, %d webhook configurations left", len(ps.Items), len(bs.Items), len(ws.Items))
	})
}

// TestWideningIsReported: a SidecarSet whose selector requires no label leaves the injection
// webhooks without a label selector. Its author is warned at write time, the SidecarSet carries the
// condition WebhookReceivesEveryPod (True, SelectorRequiresNoLabel, every pod create then calling
// the server, for a webhook-path SidecarSet) and the gauge is 1; once its selector requires a
// label again, the condition turns False and the gauge 0.
func TestWideningIsReported(t *testing.T) {
	deleteAllSidecarSets(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	manifest := func(selector string) string {
		return `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: widening}
spec:
  namespace: e2e-widening-nowhere
  selector: ` + selector + `
  containers:
  - {name: widening, image: busybox, shareVolumePolicy: {type: enabled}}
`
	}
	out, err := runKubectl(t, manifest("{matchExpressions: [{key: app, operator: NotIn, values: [db]}]}"), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.Contains(out, "Warning:") || !strings.Contains(out, "requires no label") {
		t.Errorf("kubectl apply printed no warning about the selector: %s", out)
	}
	waitWidening := func(status metav1.ConditionStatus, reason, message, gauge string) {
		t.Helper()
		eventually(t, fmt.Sprintf("condition WebhookReceivesEveryPod %s %s with %q", status, reason, message), time.Minute, func(ctx context.Context) (bool, string) {
			ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "widening", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			c := apimeta.FindStatusCondition(ss.Status.Conditions, "WebhookReceivesEveryPod")
			return c != nil && c.ObservedGeneration == ss.Generation && c.Status == status && c.Reason == reason &&
				strings.Contains(c.Message, message), fmt.Sprintf("generation %d, condition %+v", ss.Generation, c)
		})
		if got := grepLines(serverMetrics(t), "sidecarset_injection_webhook_selects_every_pod"); !strings.HasSuffix(strings.TrimSpace(got), " "+gauge) {
			t.Errorf("gauge: %q, want %s", got, gauge)
		}
	}
	waitWidening(metav1.ConditionTrue, apps.WideningSelectorRequiresNoLabel, "calls this server", "1")
	if out, err := runKubectl(t, manifest("{matchLabels: {app: widening}}"), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	waitWidening(metav1.ConditionFalse, "Narrowed", "label selectors narrow", "0")
}
