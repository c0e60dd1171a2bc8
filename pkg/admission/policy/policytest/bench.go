package policytest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// BenchSidecarSets returns the n SidecarSets of the injection benchmarks (not defaulted): five-0..4
// select bench=five, the others each select their own value of label bench-other; one container
// each.
func BenchSidecarSets(n int) []*v1alpha1.SidecarSet {
	out := make([]*v1alpha1.SidecarSet, 0, n)
	for i := 0; i < n; i++ {
		ss := &v1alpha1.SidecarSet{}
		ss.Name = fmt.Sprintf("bench-%04d", i)
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench-other": fmt.Sprint(i)}}
		name := fmt.Sprintf("other-%d", i)
		if i < 5 {
			ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bench": "five"}}
			name = fmt.Sprintf("five-%d", i)
		}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox:1.36",
			Env: []corev1.EnvVar{{Name: "ROLE", Value: "bench"}}}}}
		out = append(out, ss)
	}
	return out
}
