package policytest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Shapes of the injection benchmarks: how n stored SidecarSets select pods. In every shape,
// five-0..4 select the measured pod (label bench=five, in namespace bench) and no other SidecarSet
// does; a pod labelled bench=none or without the key bench is selected by none.
const (
	// ShapeOneKey is the manual's pattern: every SidecarSet selects its own value of one key
	// (bench: other-N), the key the measured pods carry.
	ShapeOneKey = "onekey"
	// ShapeKeys: the others select their own value of another key (bench-other: N).
	ShapeKeys = "keys"
	// ShapeMixed: several keys, In expressions, a second key required with Exists, spec.namespace
	// and namespaceSelectors, and a few SidecarSets selecting a label most pods carry (tier: web)
	// outside the measured namespace.
	ShapeMixed = "mixed"
)

// Shapes are every benchmark shape.
var Shapes = []string{ShapeOneKey, ShapeKeys, ShapeMixed}

// BenchSidecarSets returns the n SidecarSets of the injection benchmarks (not defaulted) of the
// given shape; one container each.
func BenchSidecarSets(shape string, n int) []*v1alpha1.SidecarSet {
	out := make([]*v1alpha1.SidecarSet, 0, n)
	for i := 0; i < n; i++ {
		ss := &v1alpha1.SidecarSet{}
		ss.Name = fmt.Sprintf("bench-%04d", i)
		name := fmt.Sprintf("other-%d", i)
		if i < 5 {
			ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "five"}}
			name = fmt.Sprintf("five-%d", i)
		} else {
			otherSelector(ss, shape, i)
		}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox:1.36",
			Env: []corev1.EnvVar{{Name: "ROLE", Value: "bench"}}}}}
		out = append(out, ss)
	}
	return out
}

// otherSelector sets the selector of the i-th SidecarSet that does not select the measured pod.
func otherSelector(ss *v1alpha1.SidecarSet, shape string, i int) {
	v := fmt.Sprintf("other-%d", i)
	switch shape {
	case ShapeOneKey:
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench": v}}
	case ShapeKeys:
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench-other": fmt.Sprint(i)}}
	default:
		mixedSelector(ss, i, v)
	}
}

func mixedSelector(ss *v1alpha1.SidecarSet, i int, v string) {
	in := func(key string, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
	}
	switch {
	case i < 8: // a label most pods carry, outside the measured namespace
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
		ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bench"}}}}
	case i%5 == 0:
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench": v}}
	case i%5 == 1:
		ss.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", v, v+"-canary")}}
	case i%5 == 2:
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": fmt.Sprintf("team-%d", i%50)},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "component", Operator: metav1.LabelSelectorOpExists}}}
	case i%5 == 3:
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench": v}}
		ss.Spec.Namespace = fmt.Sprintf("ns-%d", i%20)
	default:
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": v, "tier": "backend"}}
		ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	}
}
