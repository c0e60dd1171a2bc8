package rollout

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// benchPods returns n managed pods of SidecarSet v2 as a cluster shows them mid-rollout: two app
// containers and one sidecar each, injected from v1; every other pod was upgraded in place to v2
// and restarted (so it carries an in-place update record). Status images are what containerd
// reports (fully qualified), with real-looking imageIDs and containerIDs.
func benchPods(n int) (*v1alpha1.SidecarSet, []*corev1.Pod) {
	image := func(v string) string { return "registry.example.com/mesh/proxy:" + v }
	v1 := newSidecarSet(image("1.20.1"), "4c5b9f7b6wz2vd8xw8b2c4fv7c5z9x2b7c8d5fv9b2c4fv7c5z9x", "85x8c9wbfx5z7f9c4d8z7bv6fcw9zv7w4c2b9x8bf7x2v4w5zf8b")
	v2 := withVersion(v1, image("1.21.0"), "v7b5fz2c9w8d4x6b2fc7z5w9x8v4d2b6c9f7x5w4z8b2c6v9fd", "85x8c9wbfx5z7f9c4d8z7bv6fcw9zv7w4c2b9x8bf7x2v4w5zf8b")
	v2.Spec.UpdateStrategy.MaxUnavailable = intOrStr("10%")
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := newPod(fmt.Sprintf("web-7d9f8c6b5-%05d", i), v1)
		p.Namespace = fmt.Sprintf("team-%02d", i%40)
		p.Labels = map[string]string{
			"app": "web", "pod-template-hash": "7d9f8c6b5", "topology.kubernetes.io/zone": zones[i%3],
			"app.kubernetes.io/name": "web", "app.kubernetes.io/version": "3.4.1",
		}
		p.Annotations["kubectl.kubernetes.io/restartedAt"] = "2026-02-27T09:13:44Z"
		p.Annotations["prometheus.io/scrape"] = "true"
		p.Annotations["prometheus.io/port"] = "9102"
		p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(i) * time.Second))
		p.Spec.Containers = []corev1.Container{
			{Name: "web", Image: "nginx:1.27"},
			{Name: "worker", Image: "ghcr.io/example/worker:2.3.0"},
			p.Spec.Containers[1], // the sidecar
		}
		p.Status.ContainerStatuses = nil
		for j := range p.Spec.Containers {
			st := runningStatus(p, &p.Spec.Containers[j])
			st.Image = "docker.io/library/" + st.Image
			if j == 1 {
				st.Image = p.Spec.Containers[j].Image
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
		}
		p.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: p.CreationTimestamp},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: p.CreationTimestamp},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(p.CreationTimestamp.Add(time.Duration(i%97) * time.Second))},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: p.CreationTimestamp},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: p.CreationTimestamp},
			{Type: sidecar.UpgradableCondition, Status: corev1.ConditionTrue, Reason: sidecar.UpgradableReason, Message: `{"ss":true}`},
		}
		p.Status.PodIP, p.Status.HostIP = fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256), "192.168.0.10"
		if i%2 == 0 {
			upgradePod(p, v2, t0.Add(time.Minute))
			restart(p, "sidecar")
			if i%4 == 2 {
				// A runtime reporting the image by digest: completion is read from the record.
				statusOf(p, "sidecar").Image = "registry.example.com/mesh/proxy@sha256:" + digestOf(image("1.21.0"))
			}
		}
		pods[i] = p
	}
	return v2, pods
}

func BenchmarkPlan10000(b *testing.B) {
	ss, full := benchPods(10000)
	pods := cached(full)
	res := Plan(ss, pods)
	if res.Counts.Matched != 10000 || res.Counts.Updated != 5000 || res.Counts.UpdatedReady != 5000 || len(res.Upgrade) != 1000 {
		b.Fatalf("unexpected plan: counts %+v, %d upgrades", res.Counts, len(res.Upgrade))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Plan(ss, pods)
	}
}

func BenchmarkPlan10000PriorityScatter(b *testing.B) {
	ss, full := benchPods(10000)
	pods := cached(full)
	ss.Spec.UpdateStrategy.PriorityStrategy = &v1alpha1.UpdatePriorityStrategy{WeightPriority: []v1alpha1.UpdatePriorityWeightTerm{
		{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "eu-west-1a"}}},
	}}
	ss.Spec.UpdateStrategy.ScatterStrategy = v1alpha1.UpdateScatterStrategy{{Key: "topology.kubernetes.io/zone", Value: "*"}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Plan(ss, pods)
	}
}
