package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestKeyValues: a group whose members all require values of the key gets an objectSelector on
// those values; one member accepting any value (Exists) widens it to the key alone.
func TestKeyValues(t *testing.T) {
	with := func(sel *metav1.LabelSelector) *v1alpha1.SidecarSet {
		ss := &v1alpha1.SidecarSet{}
		ss.Spec.Selector = sel
		return ss
	}
	labels := func(v string) *v1alpha1.SidecarSet {
		return with(&metav1.LabelSelector{MatchLabels: map[string]string{"app": v}})
	}
	in := func(values ...string) *v1alpha1.SidecarSet {
		return with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: values}}})
	}
	exists := with(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}})
	for _, tc := range []struct {
		name string
		sets []*v1alpha1.SidecarSet
		want []string
	}{
		{"match labels", []*v1alpha1.SidecarSet{labels("b"), labels("a"), labels("b")}, []string{"a", "b"}},
		{"match labels and In", []*v1alpha1.SidecarSet{labels("a"), in("c", "b")}, []string{"a", "b", "c"}},
		{"one Exists", []*v1alpha1.SidecarSet{labels("a"), exists}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, keyValues("app", tc.sets)); diff != "" {
				t.Errorf("keyValues (-want +got):\n%s", diff)
			}
		})
	}
	mc := matchConstraints("app", []string{"a"}, nil)
	want := []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}
	if diff := cmp.Diff(want, mc.ObjectSelector.MatchExpressions); diff != "" {
		t.Errorf("objectSelector (-want +got):\n%s", diff)
	}
}
