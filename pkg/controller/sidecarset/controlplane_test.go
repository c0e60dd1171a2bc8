package sidecarset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
)

// TestExcludedControlPlane: the controller and the rollout view count a namespace as excluded
// from injection by name (the configured ones) or by the control-plane label (any value), so
// that its pods are NamespaceExcluded and never evicted for repair.
func TestExcludedControlPlane(t *testing.T) {
	kube := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	src, err := NewPodSource(kube.Core().V1().Pods(), kube.Core().V1().Namespaces())
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
	c := &Controller{excluded: []string{"kruise-system"}, pods: src}
	v := Viewer{Pods: src, ExcludedNamespaces: []string{"kruise-system"}}
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
			if got := c.isExcluded(tc.namespace); got != tc.want {
				t.Errorf("controller: excluded %v, want %v", got, tc.want)
			}
			if got := v.excluded(tc.namespace); got != tc.want {
				t.Errorf("view: excluded %v, want %v", got, tc.want)
			}
		})
	}
	if (&Controller{}).isExcluded("kruise") {
		t.Error("a controller without pods excludes by label")
	}
}
