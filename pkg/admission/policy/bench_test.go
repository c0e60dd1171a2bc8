package policy

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// benchSets returns n SidecarSets selecting distinct label values, one container each.
func benchSets(b *testing.B, n int) []*v1alpha1.SidecarSet {
	out := make([]*v1alpha1.SidecarSet, n)
	for i := range out {
		ss := &v1alpha1.SidecarSet{}
		ss.Name = fmt.Sprintf("bench-%04d", i)
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprint(i % 50), "tier": fmt.Sprint(i)}}
		ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("c-%d", i), Image: "busybox",
			Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}}
		out[i] = prepare(b, ss)
	}
	return out
}

// BenchmarkPlanPolicies1000 plans 1,000 stored SidecarSets, as the controller does on every change.
func BenchmarkPlanPolicies1000(b *testing.B) {
	sets := benchSets(b, 1000)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := PlanPolicies(PlanInput{SidecarSets: sets, Now: now}); err != nil {
			b.Fatal(err)
		}
	}
}
