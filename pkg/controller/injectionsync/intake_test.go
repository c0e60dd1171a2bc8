package injectionsync

import (
	"context"
	"fmt"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestIntakeOpen: the first write of a namespace writes intake webhooks for that namespace alone,
// in their own configuration (the active one is never written), and waits the load delay; the writes of a held namespace within half the hold neither write nor wait,
// in this replica or another; another namespace is added and waits; a cluster SidecarSet's write
// opens every namespace and waits, after which no namespace writes; a write past half the hold
// extends it without waiting again; without a template nothing is written.
func TestIntakeOpen(t *testing.T) {
	ctx := context.Background()
	tmpl := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io"}}}
	active := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "injector-active",
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io", ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}}
	kube := fake.NewClientset(tmpl, active)
	const hold, load = 2 * time.Second, 100 * time.Millisecond
	in := &Intake{Kube: kube, Template: "injector", Hold: hold, LoadDelay: load}
	other := &Intake{Kube: kube, Template: "injector", Hold: hold, LoadDelay: load} // another replica
	writes := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "update" || a.GetVerb() == "create" {
				n++
			}
		}
		return n
	}
	// scope is what the intake webhooks in place select: every namespace, or the namespaces listed.
	scope := func() string {
		got, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "injector-intake", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Labels[apps.ManagedByLabel] != apps.ManagedByValue {
			t.Errorf("the intake configuration is not labelled %s=%s: %v", apps.ManagedByLabel, apps.ManagedByValue, got.Labels)
		}
		selective, intake := webhookconfig.SplitIntake(got.Webhooks)
		if len(selective) != 0 || len(intake) != 1 {
			t.Fatalf("webhooks: selective %v, intake %v; want one intake webhook alone", selective, intake)
		}
		for _, r := range intake[0].NamespaceSelector.MatchExpressions {
			if r.Key == corev1.LabelMetadataName && r.Operator == metav1.LabelSelectorOpIn {
				return fmt.Sprint(r.Values)
			}
		}
		return "every namespace"
	}
	for _, step := range []struct {
		name      string
		replica   *Intake
		namespace string
		sleep     time.Duration // before the open
		wantWrite bool
		wantWait  bool
		wantScope string
	}{
		{name: "first write of team-a", replica: in, namespace: "team-a", wantWrite: true, wantWait: true, wantScope: "[team-a]"},
		{name: "team-a again", replica: in, namespace: "team-a", wantScope: "[team-a]"},
		{name: "team-a in another replica", replica: other, namespace: "team-a", wantScope: "[team-a]"},
		{name: "team-b", replica: in, namespace: "team-b", wantWrite: true, wantWait: true, wantScope: "[team-a team-b]"},
		{name: "a cluster SidecarSet", replica: other, namespace: "", wantWrite: true, wantWait: true, wantScope: "every namespace"},
		{name: "team-c under the cluster hold", replica: other, namespace: "team-c", wantScope: "every namespace"},
		{name: "team-a past half its hold", replica: in, namespace: "team-a", sleep: hold / 2, wantWrite: true, wantScope: "every namespace"},
	} {
		time.Sleep(step.sleep)
		n := writes()
		start := time.Now()
		if err := step.replica.Open(ctx, step.namespace); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		took := time.Since(start)
		if wrote := writes() > n; wrote != step.wantWrite {
			t.Errorf("%s: wrote the configuration %v, want %v", step.name, wrote, step.wantWrite)
		}
		if waited := took >= load; waited != step.wantWait {
			t.Errorf("%s: took %v, want a wait of the load delay (%v): %v", step.name, took, load, step.wantWait)
		}
		if got := scope(); got != step.wantScope {
			t.Errorf("%s: intake webhooks select %s, want %s", step.name, got, step.wantScope)
		}
	}

	for _, a := range kube.Actions() {
		if w, ok := a.(interface{ GetObject() runtime.Object }); ok {
			if m, err := meta.Accessor(w.GetObject()); err == nil && m.GetName() == "injector-active" {
				t.Errorf("%s of the active configuration, want it left to the leader", a.GetVerb())
			}
		}
	}
	if got, _ := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "injector-active", metav1.GetOptions{}); len(got.Webhooks) != 1 {
		t.Errorf("the active configuration has %d webhooks, want its selective one alone", len(got.Webhooks))
	}

	none := fake.NewClientset()
	if err := (&Intake{Kube: none, Template: "injector", Hold: hold, LoadDelay: load}).Open(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	for _, a := range none.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("without a template: %s %s, want reads only", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
