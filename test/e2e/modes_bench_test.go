package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
)

// TestInjectionModes measures pod creates (server-side dry run) through kube-apiserver with
// E2E_BENCH_SETS (1,000) SidecarSets stored, 5 of which select the "five" pod, in webhook mode and
// in policy mode: p50/p99 latency added to a create without injection (the same pod with a label
// no SidecarSet selects, in a namespace both paths exclude) for a pod 5 SidecarSets match and for
// a pod none matches, and creates per second with 8 clients. The pod 5 SidecarSets match is also
// measured against its injected form created without injection, which separates what the policy
// costs from what a pod with 5 more containers costs. Opt in with E2E_BENCH=<creates per case>
// (make bench-e2e).
func TestInjectionModes(t *testing.T) {
	n := envInt("E2E_BENCH", 0)
	if n == 0 {
		t.Skip("set E2E_BENCH=<creates> to measure the injection modes")
	}
	sets := envInt("E2E_BENCH_SETS", 1000)
	deleteAllSidecarSets(t)
	ensureNamespace(t, "bench")
	defer restartServer(t, "policy")
	restartServer(t, "webhook")
	storeBenchSidecarSets(t, sets)
	defer deleteAllSidecarSets(t)
	client := unthrottled()
	five, none := benchPod(map[string]string{"bench": "five"}), benchPod(map[string]string{"bench": "none"})

	waitOwnedPolicies(t, 0)
	injected := asBare(waitInjected(t, five.withNamespace("bench"), "five-4"))
	report(t, "webhook", client, five, none, injected, n)

	restartServer(t, "policy")
	waitOwnedPolicies(t, sets)
	waitWebhookLeavesLabels(t)
	injected = asBare(waitInjected(t, five.withNamespace("bench"), "five-4"))
	report(t, "policy", client, five, none, injected, n)
}

// bareLabels select nothing: the baseline pods carry them instead of the measured pod's.
var bareLabels = map[string]string{"bench-bare": "five"}

// asBare returns the injected pod as a create nothing injects: it measures what the larger pod
// costs kube-apiserver (defaulting, validation, encoding) without any injection.
func asBare(pod *corev1.Pod) benchPodTemplate {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: pod.GenerateName, Labels: bareLabels, Annotations: pod.Annotations},
		Spec: *pod.Spec.DeepCopy()}
	return benchPodTemplate{out}
}

type benchPodTemplate struct{ *corev1.Pod }

func benchPod(labels map[string]string) benchPodTemplate {
	return benchPodTemplate{&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bench-", Labels: labels},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: new(bool),
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
	}}
}

func (p benchPodTemplate) withNamespace(ns string) *corev1.Pod {
	pod := p.DeepCopy()
	pod.Namespace = ns
	return pod
}

// storeBenchSidecarSets stores the n SidecarSets of policytest.BenchSidecarSets.
func storeBenchSidecarSets(t *testing.T, n int) {
	list := policytest.BenchSidecarSets(n)
	client := sidecars.AppsV1alpha1().SidecarSets()
	parallel(t, len(list), func(i int) error {
		_, err := client.Create(context.Background(), list[i], metav1.CreateOptions{})
		return err
	})
}

func unthrottled() kubernetes.Interface {
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: it would dominate the figures
	return kubernetes.NewForConfigOrDie(cfg)
}

// report prints the figures of one mode, the cases interleaved so that load and caches affect all.
// injected is the pod five becomes, created bare: "5 matching" is also reported against it.
func report(t *testing.T, mode string, client kubernetes.Interface, five, none, injected benchPodTemplate, n int) {
	cases := []struct {
		name string
		pod  *corev1.Pod
	}{{"bare", benchPod(bareLabels).withNamespace("kruise-system")}, {"five", five.withNamespace("bench")}, {"none", none.withNamespace("bench")},
		{"injected", injected.withNamespace("kruise-system")}}
	lat := make([][]time.Duration, len(cases))
	for _, c := range cases {
		timeCreates(t, client, c.pod, 50) // warm
	}
	for round := 0; round < n/100; round++ {
		for i, c := range cases {
			lat[i] = append(lat[i], timeCreates(t, client, c.pod, 100)...)
		}
	}
	p50b, p99b := percentiles(lat[0])
	p50f, p99f := percentiles(lat[1])
	p50n, p99n := percentiles(lat[2])
	p50i, p99i := percentiles(lat[3])
	bare := throughput(t, client, cases[0].pod, n)
	stopProfile := profileKubeAPIServer(t, mode)
	withFive := throughput(t, client, cases[1].pod, n)
	stopProfile()
	bareInjected := throughput(t, client, cases[3].pod, n)
	fmt.Printf("%s mode, %d creates per case: bare p50 %v p99 %v; 5 matching: added p50 %v p99 %v; none matching: added p50 %v p99 %v; "+
		"8 clients: bare %.0f/s, 5 matching %.0f/s (%.0f%%)\n",
		mode, len(lat[0]), p50b, p99b, p50f-p50b, p99f-p99b, p50n-p50b, p99n-p99b, bare, withFive, 100*withFive/bare)
	fmt.Printf("%s mode, the injected pod created bare: p50 %v p99 %v (5 matching adds p50 %v p99 %v to it); 8 clients %.0f/s (5 matching: %.0f%% of it)\n",
		mode, p50i, p99i, p50f-p50i, p99f-p99i, bareInjected, 100*withFive/bareInjected)
}

// profileKubeAPIServer records 5 s of kube-apiserver's CPU profile (the returned function waits for it),
// into $E2E_BENCH_PROFILE-<mode>.pprof when E2E_BENCH_PROFILE is set (go tool pprof reads it).
func profileKubeAPIServer(t *testing.T, mode string) func() {
	prefix := os.Getenv("E2E_BENCH_PROFILE")
	if prefix == "" {
		return func() {}
	}
	done := make(chan []byte)
	go func() {
		data, err := kube.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "5").DoRaw(context.Background())
		if err != nil {
			t.Errorf("profiling kube-apiserver: %v", err)
		}
		done <- data
	}()
	return func() {
		if data := <-done; len(data) > 0 {
			if err := os.WriteFile(prefix+"-"+mode+".pprof", data, 0o644); err != nil {
				t.Error(err)
			}
		}
	}
}

func timeCreates(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, n int) []time.Duration {
	t.Helper()
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		got, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, time.Since(start))
		if want := wantContainers(pod); len(got.Spec.Containers) != want {
			t.Fatalf("pod %v in %s: %d containers, want %d", pod.Labels, pod.Namespace, len(got.Spec.Containers), want)
		}
	}
	return out
}

func wantContainers(pod *corev1.Pod) int {
	if pod.Namespace == "bench" && pod.Labels["bench"] == "five" {
		return 6
	}
	return len(pod.Spec.Containers)
}

// throughput returns creates per second of 8 clients creating n pods together.
func throughput(t *testing.T, client kubernetes.Interface, pod *corev1.Pod, n int) float64 {
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n/8; i++ {
				if _, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod.DeepCopy(),
					metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(n/8*8) / time.Since(start).Seconds()
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100]
}
