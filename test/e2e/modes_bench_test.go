package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestInjectionModes measures, for every shape of policytest.Shapes (E2E_BENCH_SHAPES, comma
// separated, narrows them), with E2E_BENCH_SETS (1,000) SidecarSets stored, 5 of which select the
// "five" pod, in webhook mode and in policy mode:
//   - SidecarSet writes: `kubectl apply` of all of them, then 20 more creates one by one (p50 of
//     the create call, and kube-apiserver's CPU per create until the 20 have settled);
//   - pod creates (server-side dry run) through kube-apiserver, once the intake webhooks that
//     follow SidecarSet writes are removed: p50/p99 latency added to a create
//     without injection (the same pod with a label no SidecarSet selects, in a namespace both
//     paths exclude) for a pod 5 SidecarSets match, a pod with the key but a value none selects,
//     and a pod without the key, and creates per second with 8 clients. The pod 5 SidecarSets
//     match is also measured against its injected form created without injection, which
//     separates what the injection costs from what a pod with 5 more containers costs.
//
// Opt in with E2E_BENCH=<creates per case> (make bench-e2e).
func TestInjectionModes(t *testing.T) {
	n := envInt("E2E_BENCH", 0)
	if n == 0 {
		t.Skip("set E2E_BENCH=<creates> to measure the injection modes")
	}
	sets := envInt("E2E_BENCH_SETS", 1000)
	shapes := policytest.Shapes
	if s := os.Getenv("E2E_BENCH_SHAPES"); s != "" {
		shapes = strings.Split(s, ",")
	}
	ensureNamespace(t, "bench")
	defer restartServer(t, "policy")
	defer deleteAllSidecarSets(t)
	for _, shape := range shapes {
		for _, mode := range []string{"webhook", "policy"} {
			benchShape(t, shape, mode, sets, n)
		}
	}
}

// benchShape measures one shape in one mode, from no SidecarSet stored.
func benchShape(t *testing.T, shape, mode string, sets, n int) {
	steal := stealSince(t)
	defer func() {
		fmt.Printf("%s, %s mode: the hypervisor took %.0f%% of the machine's CPU time meanwhile (steal)\n", shape, mode, 100*steal())
	}()
	deleteAllSidecarSets(t)
	restartServer(t, mode)
	waitOwnedPolicies(t, 0)
	label := fmt.Sprintf("%s, %s mode", shape, mode)
	list := policytest.BenchSidecarSets(shape, sets)
	applied := applyAll(t, list)
	settleAll(t, 10*time.Minute)
	fmt.Printf("%s: kubectl apply of %d SidecarSets %v (settled %v)\n", label, sets, applied.apply.Round(time.Millisecond), applied.settle.Round(time.Millisecond))
	p50, cpu := timeSidecarSetCreates(t, shape, sets, 20)
	fmt.Printf("%s: SidecarSet create with %d stored: p50 %v; kube-apiserver CPU %v per create (until settled)\n",
		label, sets, p50.Round(100*time.Microsecond), cpu.Round(time.Millisecond))
	client := unthrottled()
	five, none, nokey := benchPod(map[string]string{"bench": "five"}), benchPod(map[string]string{"bench": "none"}), benchPod(map[string]string{"bench-nokey": "x"})
	injected := asBare(waitInjected(t, five.withNamespace("bench"), "five-4"))
	// The steady state: while SidecarSet writes are recent the intake webhooks send every pod to
	// the server (docs/policy-injection.md#pods-created-right-after-their-sidecarset), in both
	// modes; that is not what a pod costs the rest of the time.
	waitIntakeClosed(t)
	report(t, label, client, five, none, nokey, injected, n)
}

type appliedTimes struct{ apply, settle time.Duration }

// applyAll writes the SidecarSets to a file and applies it with kubectl, as a GitOps sync would.
func applyAll(t *testing.T, list []*v1alpha1.SidecarSet) appliedTimes {
	t.Helper()
	var b strings.Builder
	for _, ss := range list {
		ss.APIVersion, ss.Kind = "apps.kruise.io/v1alpha1", "SidecarSet"
		data, err := yaml.Marshal(ss)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	file := filepath.Join(t.TempDir(), "sidecarsets.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "apply", "-f", file).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, lastLines(string(out), 20))
	}
	apply := time.Since(start)
	settleAll(t, 10*time.Minute)
	return appliedTimes{apply: apply, settle: time.Since(start)}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// settleAll waits until the controller observed the generation of every stored SidecarSet.
func settleAll(t *testing.T, timeout time.Duration) {
	t.Helper()
	// Read in pages, every second: a list of 50,000 SidecarSets in one response costs the server
	// hundreds of megabytes and seconds of CPU, which would be measured as its own.
	eventuallyEvery(t, "every SidecarSet settled", time.Second, timeout, func(ctx context.Context) (bool, string) {
		unsettled, total, example := 0, 0, ""
		err := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return sidecars.AppsV1alpha1().SidecarSets().List(ctx, opts)
		}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			total++
			if ss := obj.(*v1alpha1.SidecarSet); ss.Status.ObservedGeneration != ss.Generation {
				if unsettled == 0 {
					example = fmt.Sprintf(", %s at generation %d observed %d", ss.Name, ss.Generation, ss.Status.ObservedGeneration)
				}
				unsettled++
			}
			return nil
		})
		if err != nil {
			return false, err.Error()
		}
		return unsettled == 0, fmt.Sprintf("%d of %d not settled%s", unsettled, total, example)
	})
}

// timeSidecarSetCreates creates n more SidecarSets one by one beside the first stored of the
// shape's benchmark list (each selecting a value of its own of the shape's key, with sidecar
// names none of them has) and returns the p50 of the create calls and kube-apiserver's CPU time
// per create, counted until every SidecarSet has settled.
func timeSidecarSetCreates(t *testing.T, shape string, stored, n int) (time.Duration, time.Duration) {
	t.Helper()
	from := max(5000, stored)
	extra := policytest.BenchSidecarSets(shape, from+n)[from:]
	before := kubeAPIServerCPU(t)
	var lat []time.Duration
	for i, ss := range extra {
		ss.Name = fmt.Sprintf("bench-write-%02d", i)
		start := time.Now()
		if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(context.Background(), ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	settleAll(t, 5*time.Minute)
	cpu := kubeAPIServerCPU(t) - before
	p50, _ := percentiles(lat)
	return p50, cpu / time.Duration(n)
}

// kubeAPIServerCPU is the CPU time (user and system) kube-apiserver has used so far.
func kubeAPIServerCPU(t *testing.T) time.Duration {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(localState(), "run", "kube-apiserver.pid"))
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
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

func unthrottled() kubernetes.Interface {
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: it would dominate the figures
	return kubernetes.NewForConfigOrDie(cfg)
}

// podFigures are what measurePods measures of pod creates in one mode.
type podFigures struct {
	bareP50, bareP99         time.Duration // a create nothing injects
	fiveP50, fiveP99         time.Duration // a create 5 SidecarSets inject
	noneP50, noneP99         time.Duration // the key, no value selected
	noKeyP50, noKeyP99       time.Duration // without the key
	injectedP50, injectedP99 time.Duration // the injected pod created bare
	bareRate, fiveRate       float64       // creates per second with 8 clients
	injectedRate             float64
}

// measurePods measures pod creates in one mode, the cases interleaved so that load and caches
// affect all. injected is the pod five becomes, created bare.
func measurePods(t *testing.T, mode string, client kubernetes.Interface, five, none, nokey, injected benchPodTemplate, n int) podFigures {
	cases := []struct {
		name string
		pod  *corev1.Pod
	}{{"bare", benchPod(bareLabels).withNamespace(serverNamespace)}, {"five", five.withNamespace("bench")}, {"none", none.withNamespace("bench")},
		{"injected", injected.withNamespace(serverNamespace)}, {"nokey", nokey.withNamespace("bench")}}
	lat := make([][]time.Duration, len(cases))
	for _, c := range cases {
		timeCreates(t, client, c.pod, 50) // warm
	}
	for round := 0; round < max(1, n/100); round++ {
		for i, c := range cases {
			lat[i] = append(lat[i], timeCreates(t, client, c.pod, min(n, 100))...)
		}
	}
	var f podFigures
	f.bareP50, f.bareP99 = percentiles(lat[0])
	f.fiveP50, f.fiveP99 = percentiles(lat[1])
	f.noneP50, f.noneP99 = percentiles(lat[2])
	f.injectedP50, f.injectedP99 = percentiles(lat[3])
	f.noKeyP50, f.noKeyP99 = percentiles(lat[4])
	f.bareRate = throughput(t, client, cases[0].pod, n)
	stopProfile, stopServerProfile := profileKubeAPIServer(t, mode), profileServer(t, mode)
	f.fiveRate = throughput(t, client, cases[1].pod, n)
	stopProfile()
	stopServerProfile()
	f.injectedRate = throughput(t, client, cases[3].pod, n)
	return f
}

// report prints the figures of one mode (see measurePods).
func report(t *testing.T, mode string, client kubernetes.Interface, five, none, nokey, injected benchPodTemplate, n int) {
	f := measurePods(t, mode, client, five, none, nokey, injected, n)
	fmt.Printf("%s, %d creates per case: bare p50 %v p99 %v; 5 matching: added p50 %v p99 %v; the key, no value matching: added p50 %v p99 %v; "+
		"without the key: added p50 %v p99 %v; 8 clients: bare %.0f/s, 5 matching %.0f/s (%.0f%%)\n",
		mode, n, f.bareP50, f.bareP99, f.fiveP50-f.bareP50, f.fiveP99-f.bareP99, f.noneP50-f.bareP50, f.noneP99-f.bareP99,
		f.noKeyP50-f.bareP50, f.noKeyP99-f.bareP99, f.bareRate, f.fiveRate, 100*f.fiveRate/f.bareRate)
	fmt.Printf("%s, the injected pod created bare: p50 %v p99 %v (5 matching adds p50 %v p99 %v to it); 8 clients %.0f/s (5 matching: %.0f%% of it)\n",
		mode, f.injectedP50, f.injectedP99, f.fiveP50-f.injectedP50, f.fiveP99-f.injectedP99, f.injectedRate, 100*f.fiveRate/f.injectedRate)
}

// profileKubeAPIServer records 5 s of kube-apiserver's CPU profile (the returned function waits for it),
// into $E2E_BENCH_PROFILE-<name>.pprof when E2E_BENCH_PROFILE is set (go tool pprof reads it).
func profileKubeAPIServer(t *testing.T, name string) func() {
	return profileCPU(t, kube.CoreV1().RESTClient(), name)
}

// profileServer records 5 s of the leading server's CPU profile, as profileKubeAPIServer does,
// into $E2E_BENCH_PROFILE-server-<name>.pprof.
func profileServer(t *testing.T, name string) func() {
	direct, err := kubernetes.NewForConfig(serverConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	return profileCPU(t, direct.CoreV1().RESTClient(), "server-"+name)
}

func profileCPU(t *testing.T, client rest.Interface, name string) func() {
	prefix := os.Getenv("E2E_BENCH_PROFILE")
	if prefix == "" {
		return func() {}
	}
	done := make(chan []byte)
	go func() {
		data, err := client.Get().AbsPath("/debug/pprof/profile").Param("seconds", "5").DoRaw(context.Background())
		if err != nil {
			t.Errorf("profiling %s: %v", name, err)
		}
		done <- data
	}()
	return func() {
		if data := <-done; len(data) > 0 {
			if err := os.WriteFile(prefix+"-"+name+".pprof", data, 0o644); err != nil {
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
