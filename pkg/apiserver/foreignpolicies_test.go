package apiserver

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestForeignPoliciesHidesOwnPolicies: the generic server's MutatingAdmissionPolicy plugin reads
// the factory's policy and binding informers; once foreignPolicies registered them, they hold
// every policy and binding but the ones this server writes.
func TestForeignPoliciesHidesOwnPolicies(t *testing.T) {
	owned := map[string]string{apps.ManagedByLabel: apps.ManagedByValue}
	kube := fake.NewClientset(
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "sidecarsets-logs", Labels: owned}},
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "admins-own"}},
		&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "other-tool", Labels: map[string]string{apps.ManagedByLabel: "helm"}}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "sidecarsets-logs", Labels: owned}},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "admins-own"}},
	)
	f := kubeinformers.NewSharedInformerFactory(kube, 0)
	foreignPolicies(f)
	policies := f.Admissionregistration().V1().MutatingAdmissionPolicies().Informer()
	bindings := f.Admissionregistration().V1().MutatingAdmissionPolicyBindings().Informer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), policies.HasSynced, bindings.HasSynced) {
		t.Fatal("informers not synced")
	}
	for _, tc := range []struct {
		kind  string
		store cache.Store
		want  []string
	}{
		{"policies", policies.GetStore(), []string{"admins-own", "other-tool"}},
		{"bindings", bindings.GetStore(), []string{"admins-own"}},
	} {
		got := map[string]bool{}
		for _, k := range tc.store.ListKeys() {
			got[k] = true
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s cached %v, want %v", tc.kind, tc.store.ListKeys(), tc.want)
		}
		for _, w := range tc.want {
			if !got[w] {
				t.Errorf("%s cached %v, want %v", tc.kind, tc.store.ListKeys(), tc.want)
			}
		}
	}
}
