package apps

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestSkipsControlPlane: a namespace labelled control-plane, with any value (the empty one too),
// is left out, as OpenKruise's webhook leaves it; ControlPlaneRequirement as a namespaceSelector
// agrees with SkipsControlPlane on every case.
func TestSkipsControlPlane(t *testing.T) {
	sel, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{ControlPlaneRequirement()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		skips  bool
	}{
		{"no labels", nil, false},
		{"other labels", map[string]string{"env": "prod", "kubernetes.io/metadata.name": "shop"}, false},
		{"controller-manager", map[string]string{"control-plane": "controller-manager"}, true},
		{"empty value", map[string]string{"control-plane": ""}, true},
		{"a key that only contains it", map[string]string{"example.com/control-plane": "x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SkipsControlPlane(tc.labels); got != tc.skips {
				t.Errorf("SkipsControlPlane = %v, want %v", got, tc.skips)
			}
			if selected := sel.Matches(labels.Set(tc.labels)); selected == tc.skips {
				t.Errorf("the namespaceSelector selects the namespace: %v, want %v", selected, !tc.skips)
			}
		})
	}
}

func TestExcludedFromInjection(t *testing.T) {
	excluded := []string{"sidecarset-system", "kruise-system"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"sidecarset-system", nil, true},
		{"kruise-system", map[string]string{"team": "platform"}, true},
		{"shop", map[string]string{ControlPlaneNamespaceLabel: ""}, true},
		{"shop", map[string]string{ControlPlaneNamespaceLabel: "false"}, true},
		{"shop", map[string]string{"team": "shop"}, false},
		{"shop", nil, false},
	} {
		if got := ExcludedFromInjection(tc.name, tc.labels, excluded); got != tc.want {
			t.Errorf("ExcludedFromInjection(%s, %v) = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
