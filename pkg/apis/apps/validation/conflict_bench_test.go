package validation

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// BenchmarkValidateConflicts checks one more SidecarSet against 1,000 and 10,000 stored ones, as
// every SidecarSet write does: the manual's shape (each selecting its own value of one key, one
// sidecar), and the same with a namespaceSelector on every other one.
func BenchmarkValidateConflicts(b *testing.B) {
	set := func(i int, nsSelector bool) *apps.SidecarSet {
		ss := &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%05d", i)}}
		ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", i)}}
		if nsSelector && i%2 == 0 {
			ss.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": fmt.Sprintf("t%d", i%50)}}
		}
		ss.Spec.Containers = []apps.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("log-%d", i), Image: "busybox"}}}
		return ss
	}
	for _, shape := range []string{"onekey", "namespaces"} {
		for _, n := range []int{1000, 10000} {
			others := make([]*apps.SidecarSet, n)
			for i := range others {
				others[i] = set(i, shape == "namespaces")
			}
			ss := set(n, shape == "namespaces")
			b.Run(fmt.Sprintf("%s/%d", shape, n), func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; i < b.N; i++ {
					if errs := ValidateConflicts(ss, others); len(errs) > 0 {
						b.Fatal(errs)
					}
				}
			})
		}
	}
}
