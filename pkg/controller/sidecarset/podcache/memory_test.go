package podcache

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// BenchmarkCachedPodBytes reports the heap a cached pod costs: decoded pods (as the informer
// receives them) go through Transform and are kept, with a collection every 1,000 pods as a server
// sees while pods arrive over minutes (shared strings must survive it), and the live heap growth
// is divided by their number.
func BenchmarkCachedPodBytes(b *testing.B) {
	ss := inplacetest.SidecarSet(b, inplacetest.Doc, nil)
	template := inplacetest.InjectedPod(b, ss)
	template.Spec.Containers = append(template.Spec.Containers, corev1.Container{Name: "helper", Image: "helper:1"})
	template.Status.ContainerStatuses = append(template.Status.ContainerStatuses, corev1.ContainerStatus{
		Name: "helper", Image: "helper:1", ImageID: "docker.io/library/helper@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		ContainerID: "containerd://0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	// A Deployment's pod: its ReplicaSet is its controller.
	template.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f9c7b6",
		UID: "0b7f0c43-6c5e-4a8f-9a54-2f2d5c1e7e21", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	// As after a first rollout: every pod carries the SidecarSetUpgradable condition.
	template.Status.Conditions = append(template.Status.Conditions, corev1.PodCondition{Type: sidecar.UpgradableCondition,
		Status: corev1.ConditionTrue, Reason: "AllSidecarsetUpgradable", Message: `{"` + ss.Name + `":true}`,
		LastTransitionTime: metav1.Now()})
	data, err := json.Marshal(template)
	if err != nil {
		b.Fatal(err)
	}
	const n = 10000
	for i := 0; i < b.N; i++ {
		kept := make([]interface{}, 0, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for j := 0; j < n; j++ {
			pod := &corev1.Pod{}
			if err := json.Unmarshal(data, pod); err != nil {
				b.Fatal(err)
			}
			pod.Name = fmt.Sprintf("pod-%05d", j)
			obj, _ := Transform(pod)
			kept = append(kept, obj)
			if j%1000 == 999 {
				runtime.GC()
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/pod")
		runtime.KeepAlive(kept)
	}
}
