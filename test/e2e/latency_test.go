package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestInjectionLatency measures pod creates (server-side dry run) through kube-apiserver with the
// injection webhook called and matching, against creates in a namespace the webhook excludes, in
// one run. Opt in with E2E_BENCH=<creates per side>, e.g. E2E_BENCH=2000 (make bench-e2e).
func TestInjectionLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("E2E_BENCH"))
	if n <= 0 {
		t.Skip("set E2E_BENCH=<creates> to measure injection latency")
	}
	applyManualExample(t)
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: it would dominate the figures
	client := kubernetes.NewForConfigOrDie(cfg)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lat-", Labels: map[string]string{"app": "nginx"}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
	}
	// Warm both paths, then interleave them so load and caches affect both alike.
	measure(t, client, pod, "default", 50)
	measure(t, client, pod, "kruise-system", 50)
	var with, without []time.Duration
	for i := 0; i < n/100; i++ {
		with = append(with, measure(t, client, pod, "default", 100)...)
		without = append(without, measure(t, client, pod, "kruise-system", 100)...)
	}
	p50w, p99w := percentiles(with)
	p50o, p99o := percentiles(without)
	fmt.Printf("pod create (dry-run), %d each: with injection p50 %v p99 %v; without webhook p50 %v p99 %v; added p50 %v p99 %v\n",
		len(with), p50w, p99w, p50o, p99o, p50w-p50o, p99w-p99o)
}

func measure(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, namespace string, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		got, err := client.CoreV1().Pods(namespace).Create(context.Background(), pod.DeepCopy(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(start))
		if namespace == "default" && len(got.Spec.Containers) != 2 {
			t.Fatalf("pod not injected: %v", got.Spec.Containers)
		}
	}
	return out
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100]
}
