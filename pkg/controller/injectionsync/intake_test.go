package injectionsync

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestIntakeOpen: the first write of a burst adds the intake webhooks and waits the load delay;
// the writes within half the hold neither write nor wait; a later one extends the hold without
// waiting again; without a template nothing is written.
func TestIntakeOpen(t *testing.T) {
	ctx := context.Background()
	tmpl := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "injector"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io"}}}
	active := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "injector-active",
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "sidecarinjection.admission.kruise.io", ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}}
	kube := fake.NewClientset(tmpl, active)
	const hold, load = 400 * time.Millisecond, 50 * time.Millisecond
	in := &Intake{Kube: kube, Template: "injector", Hold: hold, LoadDelay: load}
	writes := func() int {
		n := 0
		for _, a := range kube.Actions() {
			if a.GetVerb() == "update" || a.GetVerb() == "create" {
				n++
			}
		}
		return n
	}
	read := func() *admissionregistrationv1.MutatingWebhookConfiguration {
		got, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "injector-active", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	start := time.Now()
	if err := in.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < load {
		t.Errorf("the first open returned after %v, before the load delay %v", took, load)
	}
	got := read()
	selective, intake := policy.SplitIntake(got.Webhooks)
	if len(selective) != 1 || len(intake) != 1 || intake[0].ObjectSelector == nil || len(intake[0].ObjectSelector.MatchLabels)+len(intake[0].ObjectSelector.MatchExpressions) != 0 {
		t.Fatalf("webhooks after the first open: selective %v, intake %v; want the selective one kept and one intake webhook selecting every pod", selective, intake)
	}
	opened := got.Annotations[apps.IntakeOpenedAnnotation]
	if opened == "" || got.Annotations[apps.IntakeUntilAnnotation] == "" {
		t.Fatalf("annotations %v, want the opening and the hold", got.Annotations)
	}
	n := writes()

	start = time.Now()
	if err := in.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= load || writes() != n {
		t.Errorf("a write within half the hold took %v and wrote %d times, want no wait and no write", took, writes()-n)
	}

	time.Sleep(hold/2 + 10*time.Millisecond)
	start = time.Now()
	if err := in.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= load || writes() != n+1 {
		t.Errorf("a write past half the hold took %v and wrote %d times, want no wait and one write", took, writes()-n)
	}
	if got := read(); got.Annotations[apps.IntakeOpenedAnnotation] != opened {
		t.Errorf("the extension moved the opening from %s to %s", opened, got.Annotations[apps.IntakeOpenedAnnotation])
	}

	none := fake.NewClientset()
	if err := (&Intake{Kube: none, Template: "injector", Hold: hold, LoadDelay: load}).Open(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range none.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("without a template: %s %s, want reads only", a.GetVerb(), a.GetResource().Resource)
		}
	}
}
