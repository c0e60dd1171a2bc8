package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestScaleCurves (make bench-curves) measures how the server's costs grow with the number of
// SidecarSets and pods, and appends one JSON record per point to E2E_CURVE_OUT
// (docs/bench/curves.jsonl, kept with the sources so that every point measured stays), which
// hack/benchplot turns into a table and a plot:
//   - for each size of E2E_CURVE_SIZES (100,1000,10000), shape of E2E_BENCH_SHAPES (all of
//     policytest.Shapes), kind of E2E_CURVE_KINDS (cluster,namespaced) and mode of
//     E2E_CURVE_MODES (webhook,policy):
//     kubectl apply of that many SidecarSets (E2E_CURVE_APPLY_CLIENTS, default 1: that many
//     kubectl apply --server-side at once) and the time until all have settled, the share
//     policies serve, E2E_CURVE_WRITES (20) more creates (p50, kube-apiserver CPU per create;
//     with E2E_BENCH_PROFILE, 5 s CPU profiles of kube-apiserver and the server), pod creates
//     (E2E_CURVE_CREATES per case: added p50/p99 of a pod 5 SidecarSets select, 8-client rate),
//     the leader's RSS, a new leader's time to resume (timeResume), and kubectl delete --all
//     (E2E_CURVE_DELETE=0 skips it and leaves the SidecarSets: 50,000 take kubectl 15 minutes);
//   - for each count of E2E_CURVE_PODS (1000,10000): kwok pods one SidecarSet selects, the
//     leader's RSS per pod, and the rollout of a new image at maxUnavailable 10% with a 1 s
//     restart against its physical pace, and the most pods unavailable at once meanwhile (a pod
//     watch; more than the budget fails the test).
//
// Opt in with E2E_CURVES=1. The whole default run takes hours on 2 cores; narrow it with the
// variables above ("none" skips a list).
func TestScaleCurves(t *testing.T) {
	if os.Getenv("E2E_CURVES") != "1" {
		t.Skip("set E2E_CURVES=1 to measure the scale curves")
	}
	out := curveOutput(t)
	ensureNamespace(t, "bench")
	defer restartServer(t, "policy")
	if os.Getenv("E2E_CURVE_DELETE") != "0" {
		defer deleteAllSidecarSets(t)
	}
	for _, size := range envInts(t, "E2E_CURVE_SIZES", "100,1000,10000") {
		for _, shape := range envList("E2E_BENCH_SHAPES", strings.Join(policytest.Shapes, ",")) {
			for _, kind := range envList("E2E_CURVE_KINDS", "cluster,namespaced") {
				for _, mode := range envList("E2E_CURVE_MODES", "webhook,policy") {
					rec := curveSets(t, size, shape, kind, mode)
					writeRecord(t, out, rec)
				}
			}
		}
	}
	for _, pods := range envInts(t, "E2E_CURVE_PODS", "1000,10000") {
		writeRecord(t, out, curvePods(t, pods))
	}
}

// curveRecord is one point of the curves; the zero fields were not measured at that point.
type curveRecord struct {
	Series string `json:"series"` // "sets" or "pods"
	Size   int    `json:"size"`   // SidecarSets or pods
	Shape  string `json:"shape,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Mode   string `json:"mode,omitempty"`

	ApplySeconds float64 `json:"applySeconds,omitempty"`
	// ApplyClients is how many kubectl apply --server-side shared the apply; absent, one kubectl
	// apply (client-side) of the whole file.
	ApplyClients   int     `json:"applyClients,omitempty"`
	SettleSeconds  float64 `json:"settleSeconds,omitempty"`
	DeleteSeconds  float64 `json:"deleteSeconds,omitempty"`
	PolicyShare    float64 `json:"policyShare"`
	CreateP50Ms    float64 `json:"createP50Ms,omitempty"`
	CPUPerWriteMs  float64 `json:"cpuPerWriteMs,omitempty"`
	AddedP50Ms     float64 `json:"addedP50Ms,omitempty"`
	AddedP99Ms     float64 `json:"addedP99Ms,omitempty"`
	Rate8          float64 `json:"rate8,omitempty"`
	BareRate8      float64 `json:"bareRate8,omitempty"`
	RSSMiB         float64 `json:"rssMiB,omitempty"`
	ResumeSeconds  float64 `json:"resumeSeconds,omitempty"`
	RSSPerPodKiB   float64 `json:"rssPerPodKiB,omitempty"`
	RolloutSeconds float64 `json:"rolloutSeconds,omitempty"`
	MaxUnavailable int     `json:"maxUnavailable,omitempty"` // pods unavailable at once during the rollout, at most
	IdealSeconds   float64 `json:"idealSeconds,omitempty"`
	// FloorSeconds is the same rollout driven by rolloutFloor: the writes it needs, issued as soon
	// as the budget allows, by test code that plans nothing.
	FloorSeconds float64 `json:"floorSeconds,omitempty"`
	// StealShare is the share of the machine's CPU time its hypervisor took while the point was
	// measured (stealSince).
	StealShare float64 `json:"stealShare"`
}

func curveOutput(t *testing.T) string {
	out := os.Getenv("E2E_CURVE_OUT")
	if out == "" {
		out = filepath.Join(root, "docs", "bench", "curves.jsonl")
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

func writeRecord(t *testing.T, file string, rec curveRecord) {
	t.Helper()
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("curve: %s\n", data)
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(data, '\n')); err != nil {
		t.Fatal(err)
	}
}

func envList(name, def string) []string {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	return strings.Split(v, ",")
}

// envInts reads a comma-separated list of positive numbers; "none" is the empty list.
func envInts(t *testing.T, name, def string) []int {
	var out []int
	if os.Getenv(name) == "none" {
		return nil
	}
	for _, s := range envList(name, def) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			t.Fatalf("%s: %q is not a positive number", name, s)
		}
		out = append(out, n)
	}
	return out
}

// curveNamespace is where namespaced SidecarSet i lives: the five that select the measured pod in
// its namespace, the others 200 to a namespace (the server's default limit per namespace).
func curveNamespace(i int) string {
	if i < 5 {
		return "bench"
	}
	return fmt.Sprintf("bench-curve-%03d", (i-5)/200)
}

// curveSets measures one point of the SidecarSet curves, from none stored.
func curveSets(t *testing.T, size int, shape, kind, mode string) curveRecord {
	deleteAllSidecarSets(t)
	deleteAllNamespaced(t)
	restartServer(t, mode)
	waitOwnedPolicies(t, 0)
	rec := curveRecord{Series: "sets", Size: size, Shape: shape, Kind: kind, Mode: mode}
	steal := stealSince(t)
	list := policytest.BenchSidecarSets(shape, size)
	clients := envInt("E2E_CURVE_APPLY_CLIENTS", 1)
	namespaces, files := curveManifests(t, list, kind, clients)
	start := time.Now()
	bulkApply(t, namespaces, files)
	rec.ApplySeconds = time.Since(start).Seconds()
	if clients > 1 {
		rec.ApplyClients = clients
	}
	settleKind(t, kind)
	rec.SettleSeconds = time.Since(start).Seconds()
	rec.PolicyShare = policyShare(t, kind)
	point := fmt.Sprintf("creates-%d-%s-%s-%s", size, shape, kind, mode)
	profiled, serverProfiled := profileKubeAPIServer(t, point), profileServer(t, point)
	writes := envInt("E2E_CURVE_WRITES", 20)
	if kind == "cluster" {
		p50, cpu := timeSidecarSetCreates(t, shape, size, writes)
		rec.CreateP50Ms, rec.CPUPerWriteMs = ms(p50), ms(cpu)
	} else {
		p50, cpu := timeNamespacedCreates(t, writes)
		rec.CreateP50Ms, rec.CPUPerWriteMs = ms(p50), ms(cpu)
	}
	profiled()
	serverProfiled()
	five, none, nokey := benchPod(map[string]string{"bench": "five"}), benchPod(map[string]string{"bench": "none"}), benchPod(map[string]string{"bench-nokey": "x"})
	injected := asBare(waitInjected(t, five.withNamespace("bench"), "five-4"))
	// The steady state, as make bench-e2e measures it: the creates above hold the intake, which
	// sends the measured pods to the server too, for 10 s and until the leader's next plan.
	waitIntakeClosed(t)
	f := measurePods(t, mode, unthrottled(), five, none, nokey, injected, envInt("E2E_CURVE_CREATES", 500))
	rec.AddedP50Ms, rec.AddedP99Ms = ms(f.fiveP50-f.bareP50), ms(f.fiveP99-f.bareP99)
	rec.Rate8, rec.BareRate8 = f.fiveRate, f.bareRate
	rec.RSSMiB = float64(serverRSS(t)) / (1 << 20)
	rec.ResumeSeconds = timeResume(t, kind, mode, list[0].Name).Seconds()
	if os.Getenv("E2E_CURVE_DELETE") != "0" {
		rec.DeleteSeconds = deleteAllOfKind(t, kind, size).Seconds()
	}
	rec.StealShare = steal()
	return rec
}

// timeResume restarts the server, changes the SidecarSet name (of kind; a namespaced one lives in
// curveNamespace(0)) as soon as it serves, and returns how long after the new process started it
// had acted on the change (status.observedGeneration): a new leader's time to resume from a cold
// start (its caches of everything stored, the Lease, its first round). A standby replica has its
// caches already; the restart script's own time is not counted.
func timeResume(t *testing.T, kind, mode, name string) time.Duration {
	t.Helper()
	args := []string{"sidecarset", name}
	if kind != "cluster" {
		args = []string{"namespacedsidecarset", name, "-n", curveNamespace(0)}
	}
	restartServer(t, mode)
	pid := serverPID(t, 1)
	// The patch as soon as the server takes it: with tens of thousands stored it refuses writes
	// (not yet ready) until its caches are filled, which is part of what is measured.
	patch := append([]string{"patch"}, append(args, "--type=merge", "-p", `{"spec":{"updateStrategy":{"maxUnavailable":2}}}`)...)
	eventuallyEvery(t, "the patch of "+name+" accepted", 200*time.Millisecond, 5*time.Minute, func(context.Context) (bool, string) {
		out, err := runKubectl(t, "", patch...)
		return err == nil, out
	})
	eventuallyEvery(t, kind+" SidecarSet "+name+" observed by the new leader", 200*time.Millisecond, 5*time.Minute, func(ctx context.Context) (bool, string) {
		out, err := runKubectl(t, "", append([]string{"get"}, append(args, "-o", "jsonpath={.metadata.generation} {.status.observedGeneration}")...)...)
		if err != nil {
			return false, fmt.Sprintf("%v: %s", err, out)
		}
		f := strings.Fields(out)
		return len(f) == 2 && f[0] == f[1], "generation and observedGeneration: " + out
	})
	return processAge(t, pid)
}

// processAge is how long ago process pid started (/proc: its start in clock ticks, at 100 a
// second, since boot).
func processAge(t *testing.T, pid int) time.Duration {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	uptime, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis; starttime is field 22 of the line.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ticks, err := strconv.ParseFloat(fields[19], 64)
	if err != nil {
		t.Fatal(err)
	}
	up, err := strconv.ParseFloat(strings.Fields(string(uptime))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration((up - ticks/100) * float64(time.Second))
}

// deleteAllOfKind runs kubectl delete --all on the kind and returns how long until none is left.
// It does not let kubectl wait: kubectl then reads each deleted object back through a client
// limited to 5 requests a second (its default), which takes 200 s for 1,000 objects whatever the
// server; the server's part is the deletion.
func deleteAllOfKind(t *testing.T, kind string, size int) time.Duration {
	t.Helper()
	start := time.Now()
	if kind == "cluster" {
		kubectlOrFail(t, "delete", "sidecarsets", "--all", "--wait=false")
	} else {
		kubectlOrFail(t, "delete", "namespacedsidecarsets", "--all", "--all-namespaces", "--wait=false")
	}
	// kubectl deletes one at a time: 50,000 take longer than 10 minutes.
	timeout := max(10*time.Minute, time.Duration(size/20)*time.Second)
	eventuallyEvery(t, "every "+kind+" SidecarSet gone", time.Second, timeout, func(ctx context.Context) (bool, string) {
		opts := metav1.ListOptions{Limit: 1}
		var left int
		if kind == "cluster" {
			list, err := sidecars.AppsV1alpha1().SidecarSets().List(ctx, opts)
			if err != nil {
				return false, err.Error()
			}
			left = len(list.Items)
		} else {
			list, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return false, err.Error()
			}
			left = len(list.Items)
		}
		return left == 0, fmt.Sprintf("%d left on the first page", left)
	})
	return time.Since(start)
}

// curveManifests writes the SidecarSets, or as many NamespacedSidecarSets of the same specs (see
// curveNamespace), for kubectl apply, as a GitOps sync would: the namespaces to a file of their
// own (empty for the cluster kind), the SidecarSets dealt round-robin to clients files.
func curveManifests(t *testing.T, list []*v1alpha1.SidecarSet, kind string, clients int) (string, []string) {
	t.Helper()
	var namespaces strings.Builder
	sets := make([]strings.Builder, clients)
	seen := map[string]bool{}
	for i, ss := range list {
		var obj any
		if kind == "cluster" {
			ss.APIVersion, ss.Kind = "apps.kruise.io/v1alpha1", "SidecarSet"
			obj = ss
		} else {
			ns := curveNamespace(i)
			if !seen[ns] {
				seen[ns] = true
				fmt.Fprintf(&namespaces, "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
			}
			spec := ss.Spec.DeepCopy()
			spec.Namespace, spec.NamespaceSelector = "", nil
			obj = &v1alpha1.NamespacedSidecarSet{TypeMeta: metav1.TypeMeta{APIVersion: "apps.kruise.io/v1alpha1", Kind: "NamespacedSidecarSet"},
				ObjectMeta: metav1.ObjectMeta{Name: ss.Name, Namespace: ns}, Spec: *spec}
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		sets[i%clients].WriteString("---\n")
		sets[i%clients].Write(data)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	files := make([]string, clients)
	for i := range sets {
		files[i] = write(fmt.Sprintf("sets-%d.yaml", i), sets[i].String())
	}
	if namespaces.Len() == 0 {
		return "", files
	}
	return write("namespaces.yaml", namespaces.String()), files
}

// bulkApply applies the namespaces, then the files: one kubectl apply of a single file, or one
// kubectl apply --server-side per file at once (a GitOps tool's parallel sync).
func bulkApply(t *testing.T, namespaces string, files []string) {
	t.Helper()
	if namespaces != "" {
		kubectlOrFail(t, "apply", "-f", namespaces)
	}
	if len(files) == 1 {
		kubectlOrFail(t, "apply", "-f", files[0])
		return
	}
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() {
			out, err := runKubectl(t, "", "--request-timeout=10m", "apply", "--server-side", "--field-manager=bench", "-f", f)
			if err != nil {
				errs[i] = fmt.Errorf("kubectl apply --server-side -f %s: %w\n%s", f, err, lastLines(out, 20))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func kubectlOrFail(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig, "--request-timeout=10m"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, lastLines(string(out), 20))
	}
}

func settleKind(t *testing.T, kind string) {
	if kind == "cluster" {
		settleAll(t, 30*time.Minute)
	} else {
		settleTenantSets(t, 30*time.Minute)
	}
}

// policyShare is the share of the stored SidecarSets of the kind whose Injected condition names
// the policy path.
func policyShare(t *testing.T, kind string) float64 {
	t.Helper()
	list := func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		if kind == "cluster" {
			return sidecars.AppsV1alpha1().SidecarSets().List(ctx, opts)
		}
		return sidecars.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, opts)
	}
	total, policy := 0, 0
	// In pages, as kubectl reads: one response of 50,000 would weigh on the server measured next.
	err := pager.New(list).EachListItem(context.Background(), metav1.ListOptions{}, func(obj runtime.Object) error {
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *v1alpha1.SidecarSet:
			conds = o.Status.Conditions
		case *v1alpha1.NamespacedSidecarSet:
			conds = o.Status.Conditions
		}
		total++
		if cond := meta.FindStatusCondition(conds, v1alpha1.SidecarSetInjected); cond != nil && cond.Reason == string(apps.PathPolicy) {
			policy++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 {
		return 0
	}
	return float64(policy) / float64(total)
}

// timeNamespacedCreates creates n more NamespacedSidecarSets in namespace bench one by one (each
// selecting an app value of its own) and returns the p50 of the create calls and kube-apiserver's
// CPU time per create, counted until every one has settled.
func timeNamespacedCreates(t *testing.T, n int) (time.Duration, time.Duration) {
	t.Helper()
	before := kubeAPIServerCPU(t)
	var lat []time.Duration
	for i := 0; i < n; i++ {
		nss := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-write-%02d", i)},
			Spec: v1alpha1.SidecarSetSpec{
				Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"bench": fmt.Sprintf("write-%d", i)}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("write-%d", i), Image: "busybox:1.36"}}},
			}}
		start := time.Now()
		if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets("bench").Create(context.Background(), nss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	settleTenantSets(t, 5*time.Minute)
	cpu := kubeAPIServerCPU(t) - before
	p50, _ := percentiles(lat)
	return p50, cpu / time.Duration(n)
}

// deleteAllNamespaced deletes every NamespacedSidecarSet.
func deleteAllNamespaced(t *testing.T) {
	t.Helper()
	serialOnly(t, "deleting every NamespacedSidecarSet")
	kubectlOrFail(t, "delete", "namespacedsidecarsets", "--all", "--all-namespaces", "--wait=true")
}

// curvePods measures one point of the pod curves: the leader's resident set per pod (after a
// collection and a while, against the same server with the SidecarSet and no pod: see
// serverMemory), and a rollout at maxUnavailable 10% with a 1 s restart.
func curvePods(t *testing.T, n int) curveRecord {
	deleteAllSidecarSets(t)
	deleteAllNamespaced(t)
	ensureNamespace(t, scaleNamespace)
	cleanNamespace(t, scaleNamespace)
	restartServer(t, "policy") // a fresh heap
	steadyRSS(t)               // the fresh server's heap settles
	const delay = time.Second
	ss := simpleSidecarSet("curve", "busybox:1.36", ptr.To(intstr.FromString("10%")))
	prepareScaleSet(t, ss)
	idle := serverMemory(t, "curve-idle") // with the SidecarSet: what the pods add is measured
	createScalePods(t, ss.Name, n, map[string]string{"kwok.x-k8s.io/image-change-delay": delay.String()})
	waitStatusFor(t, "curve", n, 30*time.Minute)
	waitScaleStates(t, ss.Name, n, 30*time.Minute) // a steady state: the controller's writes are done
	rec := curveRecord{Series: "pods", Size: n}
	steal := stealSince(t)
	steadyRSS(t) // the collector has run before the measure, as TestServerMemoryPerPod
	loaded := serverMemory(t, "curve-loaded")
	rec.RSSMiB = float64(loaded.settledRSS) / (1 << 20)
	rec.RSSPerPodKiB = float64(loaded.settledRSS-idle.settledRSS) / float64(n) / 1024
	rec.FloorSeconds = rolloutFloor(t, n, n/10).Seconds()
	unavailable := watchUnavailable(t, scaleNamespace, "sidecar1", "busybox:1.37")
	start := time.Now()
	patchImage(t, "curve", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	profiled := profileKubeAPIServer(t, fmt.Sprintf("rollout-%d", n))
	waitStatusFor(t, "curve", n, 30*time.Minute)
	rec.RolloutSeconds = time.Since(start).Seconds()
	profiled()
	rec.MaxUnavailable = unavailable()
	if budget := n / 10; rec.MaxUnavailable > budget {
		t.Errorf("rollout of %d pods: %d unavailable at once, more than maxUnavailable 10%% (%d)", n, rec.MaxUnavailable, budget)
	}
	rec.IdealSeconds = (time.Duration((n+n/10-1)/(n/10)) * delay).Seconds()
	rec.StealShare = steal()
	deleteAllSidecarSets(t)
	cleanNamespace(t, scaleNamespace)
	return rec
}

// rolloutFloor measures how fast this machine can roll out a new image over the n scale pods
// when nothing but the writes limits it: test code keeps budget pods restarting, and upgrades
// the next pod as soon as one reports its new image and is Ready. Each pod gets what an in-place
// upgrade writes while the rollout runs: a patch of a container image and an annotation (the
// controller writes the pods' SidecarSetUpgradable conditions once the rollout is quiet), then
// the fake kubelet's own writes. It changes the pods' "helper" container, which no SidecarSet
// manages, and returns the wall time.
func rolloutFloor(t *testing.T, n, budget int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const image = "busybox:1.37"
	list, err := kube.CoreV1().Pods(scaleNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != n {
		t.Fatalf("%d scale pods, want %d", len(list.Items), n)
	}
	w := watchPods(ctx, t, scaleNamespace, list.ResourceVersion)
	defer w.Stop()
	var mu sync.Mutex
	inFlight := map[string]bool{}
	slots := make(chan struct{}, budget)
	done, lost := make(chan struct{}), make(chan struct{})
	go func() { // frees a slot for each pod in flight that runs the new image and is Ready
		finished := 0
		defer func() {
			if finished < n {
				close(lost)
			}
		}()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			st := sidecar.ContainerStatus(pod, "helper")
			mu.Lock()
			restarted := inFlight[pod.Name] && st != nil && st.Image == image && podIsReady(pod)
			if restarted {
				delete(inFlight, pod.Name)
			}
			mu.Unlock()
			if restarted {
				<-slots
				if finished++; finished == n {
					close(done)
					return
				}
			}
		}
	}()
	names := make(chan string)
	failed := make(chan error, n) // a pod not written never frees its slot: the first error ends the run
	defer close(names)
	for range 16 { // as many writers as the controller's rounds use
		go func() {
			for name := range names {
				if err := upgradeForFloor(ctx, name, image); err != nil {
					failed <- err
				}
			}
		}()
	}
	start := time.Now()
	for i := range list.Items {
		select {
		case slots <- struct{}{}:
		case <-lost:
			t.Fatal("the watch of the floor rollout ended")
		case err := <-failed:
			t.Fatal(err)
		}
		mu.Lock()
		inFlight[list.Items[i].Name] = true
		mu.Unlock()
		names <- list.Items[i].Name
	}
	select {
	case <-done:
	case <-lost:
		t.Fatal("the watch of the floor rollout ended")
	case err := <-failed:
		t.Fatal(err)
	case <-time.After(30 * time.Minute):
		t.Fatalf("the floor rollout of %d pods did not finish in 30 minutes", n)
	}
	took := time.Since(start)
	t.Logf("floor: %d pods rolled out by the writes alone in %v", n, took.Round(10*time.Millisecond))
	return took
}

// upgradeForFloor writes what an in-place upgrade writes to pod name (see rolloutFloor).
func upgradeForFloor(ctx context.Context, name, image string) error {
	pods := kube.CoreV1().Pods(scaleNamespace)
	now := time.Now().UTC().Format(time.RFC3339)
	spec := fmt.Sprintf(`{"metadata":{"annotations":{"bench.sidecarset.dev/floor":%q}},"spec":{"containers":[{"name":"helper","image":%q}]}}`, now, image)
	_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, []byte(spec), metav1.PatchOptions{})
	return err
}

// watchPods watches the pods of namespace from resourceVersion on, over protobuf, resuming where
// it left off when kube-apiserver ends the watch (a watch of thousands of pods changing at once
// may be closed, as one that falls behind).
func watchPods(ctx context.Context, t *testing.T, namespace, resourceVersion string) watch.Interface {
	t.Helper()
	cfg := rest.CopyConfig(restConfig)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	pods := kubernetes.NewForConfigOrDie(cfg).CoreV1().Pods(namespace)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, resourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// watchUnavailable watches the pods of namespace from now on and returns a function that stops
// the watch and returns the most pods seen unavailable at once during a rollout of container's
// image to image: a pod whose spec has the new image is unavailable until its status reports that
// image and the pod is Ready (pods not yet upgraded are all ready here). Every event is a sample.
func watchUnavailable(t *testing.T, namespace, container, image string) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	w := watchPods(ctx, t, namespace, list.ResourceVersion)
	done := make(chan int)
	go func() {
		down, most := map[string]bool{}, 0
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c := sidecar.FindPodContainer(pod, container)
			upgrading := c != nil && c.Image == image
			restarted := false
			if st := sidecar.ContainerStatus(pod, container); st != nil {
				restarted = st.Image == image
			}
			if upgrading && !(restarted && podIsReady(pod)) && ev.Type != watch.Deleted {
				down[pod.Name] = true
			} else {
				delete(down, pod.Name)
			}
			most = max(most, len(down))
		}
		done <- most
	}()
	return func() int {
		cancel()
		w.Stop()
		return <-done
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
