package selectoroverlap

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func labels(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: key, Operator: op, Values: values},
	}}
}

// The first nine cases are OpenKruise's TestSelectorConflict.
func TestOverlap(t *testing.T) {
	tests := []struct {
		name string
		a, b *metav1.LabelSelector
		want bool
	}{
		{name: "same label", a: labels("a", "h"), b: labels("a", "h"), want: true},
		{name: "different value", a: labels("a", "h"), b: labels("a", "i"), want: false},
		{name: "different keys", a: labels("a", "h"), b: labels("b", "i"), want: true},
		{name: "one of three differs", a: labels("a", "h", "b", "i", "c", "j"), b: labels("a", "h", "b", "x", "c", "j"), want: false},
		{name: "in contains value", a: labels("a", "h"), b: expr("a", metav1.LabelSelectorOpIn, "h", "i", "j"), want: true},
		{name: "in misses value", a: labels("a", "h"), b: expr("a", metav1.LabelSelectorOpIn, "i", "j"), want: false},
		{name: "notin excludes value", a: expr("a", metav1.LabelSelectorOpNotIn, "h", "i"), b: labels("a", "h"), want: false},
		{name: "exists", a: labels("a", "h"), b: expr("a", metav1.LabelSelectorOpExists), want: true},
		{name: "doesnotexist", a: expr("a", metav1.LabelSelectorOpDoesNotExist), b: labels("a", "h"), want: false},
		{name: "notin keeps other value", a: expr("a", metav1.LabelSelectorOpNotIn, "h"), b: expr("a", metav1.LabelSelectorOpIn, "h", "i"), want: true},
		{name: "exists on unmentioned key is disjoint", a: labels("a", "h"), b: expr("b", metav1.LabelSelectorOpExists), want: false},
		{name: "exists vs notin, Exists rule", a: expr("a", metav1.LabelSelectorOpExists), b: expr("a", metav1.LabelSelectorOpNotIn, "h"), want: false},
		{name: "in vs in", a: expr("a", metav1.LabelSelectorOpIn, "x", "y"), b: expr("a", metav1.LabelSelectorOpIn, "y"), want: true},
		{name: "literal ALL is not a wildcard", a: labels("a", "ALL"), b: labels("a", "h"), want: false},
		{name: "nil and empty", a: nil, b: &metav1.LabelSelector{}, want: true},
		{name: "nil and labels", a: nil, b: labels("a", "h"), want: true},
		{name: "namespace names", a: labels("kubernetes.io/metadata.name", "team-a"), b: labels("kubernetes.io/metadata.name", "team-b"), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Overlap(tt.a, tt.b); got != tt.want {
				t.Errorf("Overlap(a, b) = %v, want %v", got, tt.want)
			}
			if got := Overlap(tt.b, tt.a); got != tt.want {
				t.Errorf("Overlap(b, a) = %v, want %v (must be symmetric)", got, tt.want)
			}
		})
	}
}
