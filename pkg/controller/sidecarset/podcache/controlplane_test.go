package podcache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// TestExcludedControlPlane: a namespace is excluded from injection by name (the configured ones)
// or by the control-plane label (any value), so that its pods are NamespaceExcluded and never
// evicted for repair; the controller and the rollout view both ask ExcludedFromInjection.
func TestExcludedControlPlane(t *testing.T) {
	kube := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	src, err := NewSource(kube.Core().V1().Pods(), kube.Core().V1().Namespaces())
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"env": "prod"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kruise", Labels: map[string]string{"control-plane": "controller-manager"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ops", Labels: map[string]string{"control-plane": ""}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kruise-system"}},
	} {
		if err := src.namespaces.Informer().GetIndexer().Add(ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		namespace string
		want      bool
	}{
		{"shop", false},
		{"kruise", true},
		{"ops", true},
		{"kruise-system", true},
		{"gone", false},
	} {
		t.Run(tc.namespace, func(t *testing.T) {
			if got := src.ExcludedFromInjection(tc.namespace, []string{"kruise-system"}); got != tc.want {
				t.Errorf("excluded %v, want %v", got, tc.want)
			}
		})
	}
	if (*Source)(nil).ExcludedFromInjection("kruise", nil) {
		t.Error("no source excludes by label")
	}
}
