package celpatch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMatchConstraints: a group's objectSelector asks for its key with its values, natively; its
// namespaceSelector stays empty.
func TestMatchConstraints(t *testing.T) {
	mc := matchConstraints("app", []string{"a"})
	want := []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}
	if diff := cmp.Diff(want, mc.ObjectSelector.MatchExpressions); diff != "" {
		t.Errorf("objectSelector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&metav1.LabelSelector{}, mc.NamespaceSelector); diff != "" {
		t.Errorf("namespaceSelector (-want +got):\n%s", diff)
	}
}
