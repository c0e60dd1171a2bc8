package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The scale benchmarks run only with E2E_SCALE=1 (make bench-rollout, make bench-memory): they
// create thousands of kwok pods.

const scaleNamespace = "sidecarset-scale"

func scaleEnabled(t *testing.T) {
	if os.Getenv("E2E_SCALE") != "1" {
		t.Skip("set E2E_SCALE=1 to run the scale benchmarks")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestRolloutWallTime rolls a new sidecar image over E2E_SCALE_PODS (1,000) kwok pods at
// maxUnavailable 10% and compares the wall time with the ideal: batches x the kubelet's restart
// delay (E2E_RESTART_DELAY_MS, default 5000, set on each pod for the kwok image-change stage).
func TestRolloutWallTime(t *testing.T) {
	scaleEnabled(t)
	n := envInt("E2E_SCALE_PODS", 1000)
	delay := time.Duration(envInt("E2E_RESTART_DELAY_MS", 5000)) * time.Millisecond
	ss := simpleSidecarSet("scale", "busybox:1.36", ptr.To(intstr.FromString("10%")))
	prepareScale(t, ss, n, map[string]string{"kwok.x-k8s.io/image-change-delay": delay.String()})
	waitStatusFor(t, "scale", n, 10*time.Minute)

	start := time.Now()
	patchImage(t, "scale", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	waitStatusFor(t, "scale", n, 30*time.Minute)
	took := time.Since(start)
	batches := (n + n/10 - 1) / (n / 10)
	ideal := time.Duration(batches) * delay
	ratio := float64(took) / float64(ideal)
	t.Logf("rollout of %d pods at maxUnavailable 10%%: %v; ideal %d batches x %v = %v; ratio %.2f",
		n, took.Round(10*time.Millisecond), batches, delay, ideal, ratio)
	// Faster than the physical pace means more than maxUnavailable pods restarted at once; the
	// slack above it (E2E_ROLLOUT_MAX_RATIO_PCT, default 200%) is the controller's overhead.
	if took < ideal-delay {
		t.Errorf("the rollout took %v, less than %d batches of %v allow: maxUnavailable was exceeded", took, batches, delay)
	}
	if limit := float64(envInt("E2E_ROLLOUT_MAX_RATIO_PCT", 200)) / 100; ratio > limit {
		t.Errorf("the rollout took %.2f times the physical pace, more than %.2f", ratio, limit)
	}
}

// TestServerMemoryPerPod measures what E2E_SCALE_PODS (10,000) injected pods add to the server's
// memory: against the same server with the SidecarSet that selects them applied and settled (its
// compiled policy, revisions and caches are not the pods'), once the pods are created, counted
// and carry their upgrade state (the controller's writes after the injection are done, so the
// measure is of a steady state, not of a burst). The server idle without the SidecarSet is
// reported too.
func TestServerMemoryPerPod(t *testing.T) {
	scaleEnabled(t)
	n := envInt("E2E_SCALE_PODS", 10000)
	ss := simpleSidecarSet("memory", "busybox:1.36", ptr.To(intstr.FromString("10%")))
	deleteAllSidecarSets(t)
	ensureNamespace(t, scaleNamespace)
	cleanNamespace(t, scaleNamespace)
	if _, err := localUp("restart-server"); err != nil { // a fresh heap
		t.Fatal(err)
	}
	steadyRSS(t) // the fresh server's heap settles before it is measured idle
	empty := serverMemory(t, "empty")
	prepareScaleSet(t, ss)
	idle := serverMemory(t, "idle")
	createScalePods(t, ss.Name, n, nil)
	waitStatusFor(t, "memory", n, 20*time.Minute)
	waitScaleStates(t, ss.Name, n, 30*time.Minute)
	steadyRSS(t) // the collector has run before the measure
	loaded := serverMemory(t, "loaded")
	perPod := func(a, b int64) float64 { return float64(a-b) / float64(n) }
	t.Logf("server with %d pods cached: RSS %s (idle %s), %.0f B/pod; after a collection, once steady: RSS %s (idle %s), %.0f B/pod; "+
		"live heap %s (idle %s), %.0f B/pod", n, mib(loaded.rss), mib(idle.rss), perPod(loaded.rss, idle.rss),
		mib(loaded.settledRSS), mib(idle.settledRSS), perPod(loaded.settledRSS, idle.settledRSS),
		mib(loaded.live), mib(idle.live), perPod(loaded.live, idle.live))
	t.Logf("against the server without the SidecarSet (RSS %s settled, live heap %s): %.0f B/pod settled, %.0f B/pod of live heap",
		mib(empty.settledRSS), mib(empty.live), perPod(loaded.settledRSS, empty.settledRSS), perPod(loaded.live, empty.live))
	// The server keeps a trimmed copy of each pod (E2E_MAX_HEAP_PER_POD bytes of live heap at most,
	// default 16 KiB).
	if limit := float64(envInt("E2E_MAX_HEAP_PER_POD", 16<<10)); perPod(loaded.live, idle.live) > limit {
		t.Errorf("%.0f B of live heap per cached pod, more than %.0f", perPod(loaded.live, idle.live), limit)
	}
}

// waitScaleStates waits until the n pods of the scale namespace carry SidecarSet name's entry
// in their upgrade-state annotation (the controller writes them after the injection, within its
// rate of state writes). It lists the pods' metadata only.
func waitScaleStates(t *testing.T, name string, n int, timeout time.Duration) {
	t.Helper()
	cfg := metadata.ConfigFor(restConfig)
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	pods := metadata.NewForConfigOrDie(cfg).Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(scaleNamespace)
	eventually(t, fmt.Sprintf("%d pods with the upgrade state of %s", n, name), timeout, func(ctx context.Context) (bool, string) {
		list, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		with := 0
		for _, p := range list.Items {
			if _, ok := sidecar.UpgradeStates(p.Annotations[sidecar.UpgradeStateAnnotation])[name]; ok {
				with++
			}
		}
		return with == n, fmt.Sprintf("%d of %d pods", with, n)
	})
}

// prepareScale starts over with ss alone and n pods matching it, with the given annotations, on
// kwok nodes big enough for them.
func prepareScale(t *testing.T, ss *v1alpha1.SidecarSet, n int, annotations map[string]string) {
	t.Helper()
	prepareScaleSet(t, ss)
	createScalePods(t, ss.Name, n, annotations)
}

// prepareScaleSet starts over with ss alone, settled, and kwok nodes big enough for the scale pods.
func prepareScaleSet(t *testing.T, ss *v1alpha1.SidecarSet) {
	t.Helper()
	ctx := context.Background()
	deleteAllSidecarSets(t)
	ensureNamespace(t, scaleNamespace)
	cleanNamespace(t, scaleNamespace)
	for i := 0; i < 4; i++ {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-scale-%d", i),
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}, Labels: map[string]string{"type": "kwok"}},
			Status: corev1.NodeStatus{Allocatable: bigNode(), Capacity: bigNode()},
		}
		if _, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	if err := applySidecarSet(t, ss); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, ss.Name)
}

// createScalePods creates n pods of the scale namespace labelled app=name, with the given
// annotations, 32 at a time.
func createScalePods(t *testing.T, name string, n int, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, 32, n, func(i int) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%05d", name, i), Namespace: scaleNamespace,
				Labels: map[string]string{"app": name}, Annotations: annotations},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](0),
				Containers: []corev1.Container{
					{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"},
						Env: []corev1.EnvVar{{Name: "MODE", Value: "scale"}}},
					{Name: "helper", Image: "busybox:1.36", Command: []string{"sleep", "999d"}},
				}},
		}
		_, errs[i] = kube.CoreV1().Pods(scaleNamespace).Create(ctx, pod, metav1.CreateOptions{})
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("created %d pods in %v", n, time.Since(start).Round(time.Millisecond))
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	_, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func bigNode() corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods: resource.MustParse("5000")}
}

// memory is what serverMemory reads of the server process.
type memory struct {
	rss        int64 // resident set size as found
	settledRSS int64 // resident set size settle after a collection
	live       int64 // heap allocated after that collection
}

// serverMemory reads the server process's resident set size, has it collect (GET
// /debug/pprof/heap?gc=1, kept as _output/local/heap-<label>.pprof for go tool pprof), reads its
// live heap and, once it no longer moves (steadyRSS), its resident set size again: the steady
// state, which the runtime also reaches by itself (it collects at least every two minutes and
// returns what the heap no longer needs).
func serverMemory(t *testing.T, label string) memory {
	t.Helper()
	var m memory
	m.rss = serverRSS(t)
	profile, err := replicaClient(t, 1).Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("heap profile: %v", err)
	}
	if err := os.WriteFile(filepath.Join(localState(), "heap-"+label+".pprof"), profile, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(serverMetrics(t), "\n") {
		if v, ok := strings.CutPrefix(line, "go_memstats_heap_alloc_bytes "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			m.live = int64(f)
		}
	}
	m.settledRSS = steadyRSS(t)
	return m
}

// steadyRSS returns the server's resident set size once it holds still: five readings two seconds
// apart within 1% of each other, as the runtime's collector and scavenger leave it (within three
// minutes; past that, the last reading, logged).
func steadyRSS(t *testing.T) int64 {
	t.Helper()
	var last []int64
	seen, ok := pollEvery(2*time.Second, 3*time.Minute, func(context.Context) (bool, string) {
		last = append(last, serverRSS(t))
		if len(last) > 5 {
			last = last[1:]
		}
		lo, hi := slices.Min(last), slices.Max(last)
		return len(last) == 5 && hi-lo <= hi/100, fmt.Sprintf("resident set between %s and %s", mib(lo), mib(hi))
	})
	if !ok {
		t.Logf("the server's resident set did not hold still: %s", seen)
	}
	return last[len(last)-1]
}

// serverRSS reads the server process's resident set size.
func serverRSS(t *testing.T) int64 {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(localState(), "run", serverProcess(1)+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// stealSince returns a function that reports which share of this machine's CPU time the
// hypervisor took (steal, /proc/stat) since stealSince was called: on a virtual machine the
// figures of a benchmark measured while the host took half of it are not those of a quiet one.
func stealSince(t *testing.T) func() float64 {
	t.Helper()
	steal0, total0 := hostCPU(t)
	return func() float64 {
		steal, total := hostCPU(t)
		if total <= total0 {
			return 0
		}
		return (steal - steal0) / (total - total0)
	}
}

// hostCPU reads the steal time and the total CPU time of /proc/stat's first line, in ticks.
func hostCPU(t *testing.T) (steal, total float64) {
	t.Helper()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	// cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is counted
	// in user and nice already.
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		t.Fatalf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:9] {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("/proc/stat: %q: %v", line, err)
		}
		total += v
		if i == 7 {
			steal = v
		}
	}
	return steal, total
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
