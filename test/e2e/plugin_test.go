package e2e

import (
	"context"
	"encoding/json"
	"errors"
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
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var (
	pluginOnce sync.Once
	pluginPath string
	pluginErr  error
)

// plugin runs kubectl-sidecarset (built once) against the local cluster and returns its stdout,
// its stderr and its error (an *exec.ExitError for a non-zero exit).
func plugin(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	pluginOnce.Do(func() {
		pluginPath = filepath.Join(root, "_output", "bin", "kubectl-sidecarset")
		ldflags, err := exec.Command(filepath.Join(root, "hack", "version.sh")).Output()
		if err != nil {
			pluginErr = &buildError{"hack/version.sh", err}
			return
		}
		cmd := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", pluginPath, "./cmd/kubectl-sidecarset")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginErr = &buildError{string(out), err}
		}
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	cmd := exec.Command(pluginPath, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string {
	return "building kubectl-sidecarset: " + e.err.Error() + "\n" + e.out
}

// pluginAs retries a plugin command of a user with limited RBAC until it succeeds (the server
// caches authorization decisions for a few seconds after the user's role is created).
func pluginAs(t *testing.T, args ...string) string {
	t.Helper()
	var out string
	// Every second: each try runs the plugin.
	eventuallyEvery(t, "kubectl sidecarset "+strings.Join(args, " ")+" to succeed", time.Second, 30*time.Second, func(context.Context) (bool, string) {
		var errOut string
		var err error
		out, errOut, err = plugin(t, args...)
		return err == nil, fmt.Sprintf("%v\n%s%s", err, out, errOut)
	})
	return out
}

// exitCode is a plugin run's exit code: 0 without error, -1 when it did not run.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// watchReady watches SidecarSet name and sends the time its Ready condition turns True for the
// current generation, as the test sees it.
func watchReady(t *testing.T, name string) <-chan time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	w, err := sidecars.AppsV1alpha1().SidecarSets().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	at := make(chan time.Time, 1)
	go func() {
		defer cancel()
		defer w.Stop()
		for ev := range w.ResultChan() {
			ss, ok := ev.Object.(*v1alpha1.SidecarSet)
			if !ok {
				continue
			}
			if c := meta.FindStatusCondition(ss.Status.Conditions, v1alpha1.SidecarSetReady); c != nil && c.Status == metav1.ConditionTrue &&
				c.ObservedGeneration == ss.Generation {
				at <- time.Now()
				return
			}
		}
		at <- time.Now()
	}()
	return at
}

// writeSidecarSet writes ss as a manifest and returns its path.
func writeSidecarSet(t *testing.T, ss *v1alpha1.SidecarSet) string {
	t.Helper()
	ss = ss.DeepCopy()
	ss.APIVersion, ss.Kind = "apps.kruise.io/v1alpha1", "SidecarSet"
	data, err := yaml.Marshal(ss)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ss.Name+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// previewBatches runs `rollout preview` and returns each pod's batch and state.
func previewBatches(t *testing.T, name, file string) map[string]v1alpha1.RolloutPod {
	t.Helper()
	out, errOut, err := plugin(t, "rollout", "preview", name, "-f", file, "-o", "json")
	if err != nil {
		t.Fatalf("preview: %v\n%s%s", err, out, errOut)
	}
	view := &v1alpha1.SidecarSetRollout{}
	if err := json.Unmarshal([]byte(out), view); err != nil {
		t.Fatalf("preview output: %v\n%s", err, out)
	}
	pods := map[string]v1alpha1.RolloutPod{}
	for _, p := range view.Status.Pods {
		pods[p.Name] = p
	}
	return pods
}

// TestPluginRollout: preview lists the batches the rollout then takes; rollout status follows a
// rollout to its end and fails on a stalled one within its timeout; an operator holding only the
// rollout and revisions subresources pauses, resumes, lists the history and undoes.
func TestPluginRollout(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	ss := simpleSidecarSet("plugin", "busybox:1.36", ptr.To(intstr.FromInt32(2)))
	setupUpgrade(t, ss, "plugin", 5)
	good := waitSettled(t, "plugin").Status.LatestRevision

	other := ss.DeepCopy()
	other.Spec.Containers[0].Command = []string{"sleep", "1000d"}
	for name, p := range previewBatches(t, "plugin", writeSidecarSet(t, other)) {
		if p.State != v1alpha1.PodRolloutNotUpgradable || p.Batch != 0 {
			t.Errorf("non-image change: pod %s is %s/%s batch %d, want NotUpgradable", name, p.State, p.Reason, p.Batch)
		}
	}
	next := ss.DeepCopy()
	next.Spec.Containers[0].Image = "busybox:1.37"
	preview := previewBatches(t, "plugin", writeSidecarSet(t, next))
	sizes := map[int32]int{}
	for _, p := range preview {
		sizes[p.Batch]++
	}
	if len(preview) != 5 || sizes[1] != 2 || sizes[2] != 2 || sizes[3] != 1 {
		t.Fatalf("image change preview: batch sizes %v over %d pods, want 2, 2, 1", sizes, len(preview))
	}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "plugin", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := waitSettled(t, "plugin"); s.Status.LatestRevision != good {
		t.Fatalf("preview wrote the SidecarSet: latest revision %s, was %s", s.Status.LatestRevision, good)
	}

	// Record when each pod's spec gets the new image while rollout status follows the rollout.
	upgradedAt := map[string]time.Time{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			for _, p := range podsOf(ctx, "plugin") {
				if _, seen := upgradedAt[p.Name]; !seen && sidecar.FindPodContainer(p, "sidecar1").Image == "busybox:1.37" {
					upgradedAt[p.Name] = time.Now()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	patchImage(t, "plugin", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	// --timeout: a rollout of 5 pods in batches of 2 is not done within a second; exit 1.
	out, errOut, err := plugin(t, "rollout", "status", "plugin", "--timeout", "1s")
	if !strings.Contains(out, "successfully rolled out") && (exitCode(err) != 1 || !strings.Contains(errOut, "timed out waiting for the rollout")) {
		t.Errorf("rollout status --timeout 1s: exit %d, want 1 and timed out\n%s%s", exitCode(err), out, errOut)
	}
	// The watch returns as soon as the server's Ready condition turns True.
	readyAt := watchReady(t, "plugin")
	out, errOut, err = plugin(t, "rollout", "status", "plugin", "--timeout", "4m")
	returned := time.Now()
	close(stop)
	wg.Wait()
	if err != nil || !strings.Contains(out, `SidecarSet "plugin" successfully rolled out`) {
		t.Fatalf("rollout status: %v\n%s%s", err, out, errOut)
	}
	if lag := returned.Sub(<-readyAt); lag > 2*time.Second {
		t.Errorf("rollout status returned %s after the SidecarSet became Ready, want at once (a watch)", lag)
	}
	t.Logf("rollout status:\n%s", out)
	checkBatchOrder(t, preview, upgradedAt)
	// Other tests' SidecarSets may move this one's injection between policies meanwhile: Ready is
	// False until the move settles, and rollout status says why.
	eventually(t, "rollout status --watch=false of a finished rollout", 30*time.Second, func(context.Context) (bool, string) {
		out, errOut, err := plugin(t, "rollout", "status", "plugin", "--watch=false")
		if err == nil && !strings.Contains(out, "successfully rolled out") && !strings.Contains(out, "not in place yet") {
			t.Errorf("rollout status --watch=false of a finished rollout that is not done says no reason:\n%s%s", out, errOut)
		}
		return err == nil && strings.Contains(out, "successfully rolled out"), fmt.Sprintf("%v\n%s%s", err, out, errOut)
	})

	// A stalled rollout: rollout status exits non-zero within its timeout.
	patchImage(t, "plugin", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:bad"}]}}`)
	start := time.Now()
	out, errOut, err = plugin(t, "rollout", "status", "plugin", "--timeout", "60s")
	if err == nil || time.Since(start) > 75*time.Second {
		t.Fatalf("rollout status of a stalled rollout: err %v after %s\n%s%s", err, time.Since(start), out, errOut)
	}
	if !strings.Contains(errOut, "stalled") && !strings.Contains(errOut, "timed out") {
		t.Errorf("rollout status stderr does not say why: %s", errOut)
	}
	t.Logf("stalled rollout status (exit %v):\n%s%s", err, out, errOut)

	// An operator with only the subresources.
	asUser(t, "e2e-plugin-operator", []rbacv1.PolicyRule{{APIGroups: []string{"apps.kruise.io"},
		Resources: []string{"sidecarsets/rollout", "sidecarsets/revisions"}, Verbs: []string{"get", "create"}}})
	as := []string{"--as", "e2e-plugin-operator"}
	if out := pluginAs(t, append(as, "rollout", "pause", "plugin")...); !strings.Contains(out, "paused") {
		t.Errorf("pause: %s", out)
	}
	if view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "plugin", metav1.GetOptions{}); err != nil || !view.Status.Paused {
		t.Errorf("after pause: %v paused=%v", err, view != nil && view.Status.Paused)
	}
	if out := pluginAs(t, append(as, "rollout", "resume", "plugin")...); !strings.Contains(out, "resumed") {
		t.Errorf("resume: %s", out)
	}
	history := pluginAs(t, append(as, "rollout", "history", "plugin")...)
	if !strings.Contains(history, good) || !strings.Contains(history, "busybox:bad") {
		t.Errorf("history lacks the revisions:\n%s", history)
	}
	revs, err := sidecars.AppsV1alpha1().SidecarSets().GetRevisions(ctx, "plugin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var goodNumber string
	for _, r := range revs.Items {
		if r.Name == good {
			goodNumber = strconv.FormatInt(r.Revision, 10)
		}
	}
	if out := pluginAs(t, append(as, "rollout", "undo", "plugin", "--to-revision", goodNumber)...); !strings.Contains(out, good) {
		t.Errorf("undo: %s", out)
	}
	waitStatus(t, "plugin", v1alpha1.SidecarSetStatus{MatchedPods: 5, UpdatedPods: 5, ReadyPods: 5, UpdatedReadyPods: 5})
	for _, p := range listPods(t, "plugin") {
		if img := sidecar.FindPodContainer(p, "sidecar1").Image; img != "busybox:1.36" {
			t.Errorf("pod %s runs %s after undo", p.Name, img)
		}
	}
}

func podsOf(ctx context.Context, app string) []*corev1.Pod {
	list, err := kube.CoreV1().Pods(upgradeNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out
}

// checkBatchOrder checks that the rollout upgraded the pods batch by batch as previewed: every pod
// of a batch got the new spec before any pod of a later batch.
func checkBatchOrder(t *testing.T, preview map[string]v1alpha1.RolloutPod, upgradedAt map[string]time.Time) {
	t.Helper()
	names := make([]string, 0, len(upgradedAt))
	for n := range upgradedAt {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return upgradedAt[names[i]].Before(upgradedAt[names[j]]) })
	var order []string
	last := int32(0)
	for _, n := range names {
		b := preview[n].Batch
		order = append(order, n+"@"+strconv.Itoa(int(b)))
		if b < last {
			t.Errorf("pod %s of batch %d was upgraded after a pod of batch %d", n, b, last)
		}
		last = max(last, b)
	}
	if len(names) != len(preview) {
		t.Errorf("%d pods upgraded, previewed %d", len(names), len(preview))
	}
	t.Logf("upgrade order (pod@batch): %s", strings.Join(order, " "))
}

// TestPluginExplainAndWarnings: a pod creator sees the admission warning of a skipped transferEnv,
// and explain gives the reason of each SidecarSet for the created pod.
func TestPluginExplainAndWarnings(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	startOver(t, upgradeNamespace, "app=warn", "warn", "db", "paused", "elsewhere")
	warn := simpleSidecarSet("warn", "busybox:1.36", nil)
	warn.Spec.Containers[0].TransferEnv = []v1alpha1.TransferEnvVar{{SourceContainerName: "missing", EnvName: "LEVEL"}}
	db := simpleSidecarSet("db", "busybox:1.36", nil)
	paused := simpleSidecarSet("paused", "busybox:1.36", nil)
	paused.Spec.Selector.MatchLabels["app"] = "warn"
	paused.Spec.InjectionStrategy.Paused = true
	elsewhere := simpleSidecarSet("elsewhere", "busybox:1.36", nil)
	elsewhere.Spec.Selector.MatchLabels["app"] = "warn"
	elsewhere.Spec.Namespace = "default"
	for _, s := range []*v1alpha1.SidecarSet{warn, db, paused, elsewhere} {
		s.Spec.Containers[0].Name = s.Name + "-sidecar"
		if err := applySidecarSet(t, s); err != nil {
			t.Fatal(err)
		}
		waitSettled(t, s.Name)
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: warn-0, namespace: ` + upgradeNamespace + `, labels: {app: warn}}
spec:
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
  containers: [{name: app, image: busybox:1.36, command: [sleep, 999d]}]
`
	var out string
	var err error
	// The webhook path serves "warn" (transferEnv) once its match condition names it. Every second:
	// each try runs kubectl and creates the pod. The check below reports the last try.
	_, _ = pollEvery(time.Second, 60*time.Second, func(context.Context) (bool, string) {
		_, _ = runKubectl(t, "", "delete", "pod", "-n", upgradeNamespace, "warn-0", "--ignore-not-found", "--wait")
		out, err = runKubectl(t, pod, "create", "-f", "-")
		return err == nil && strings.Contains(out, "Warning"), ""
	})
	want := `Warning: SidecarSet "warn": spec.containers[0].transferEnv[0]: source container "missing" is not in the pod; nothing copied`
	if err != nil || !strings.Contains(out, want) {
		t.Fatalf("waited 1m for kubectl create to warn; last try: %v, want the warning %q in:\n%s", err, want, out)
	}
	created, err := kube.CoreV1().Pods(upgradeNamespace).Get(ctx, "warn-0", metav1.GetOptions{})
	if err != nil || !hasContainer(created, "warn-sidecar") {
		t.Fatalf("pod not injected: %v", err)
	}

	stdout, errOut, err := plugin(t, "explain", "warn-0", "-n", upgradeNamespace, "-o", "json")
	if err != nil {
		t.Fatalf("explain: %v\n%s%s", err, stdout, errOut)
	}
	var report struct {
		SidecarSets []struct {
			SidecarSet, Reason, Message, Revision, Path string
			Injected                                    bool
			Skipped                                     []struct{ Field string }
		} `json:"sidecarSets"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("explain output: %v\n%s", err, stdout)
	}
	got := map[string]string{}
	for _, e := range report.SidecarSets {
		got[e.SidecarSet] = e.Reason
		switch e.SidecarSet {
		case "warn":
			if !e.Injected || e.Revision == "" || e.Path != "Webhook" || len(e.Skipped) != 1 || e.Skipped[0].Field != "spec.containers[0].transferEnv[0]" {
				t.Errorf("warn: %+v", e)
			}
		case "db":
			if !strings.Contains(e.Message, "matchLabels app=db") {
				t.Errorf("db: %+v", e)
			}
		}
	}
	wantReasons := map[string]string{"warn": "Injected", "db": "SelectorMismatch", "paused": "InjectionPaused", "elsewhere": "NamespaceMismatch"}
	for name, reason := range wantReasons {
		if got[name] != reason {
			t.Errorf("explain %s: reason %q, want %q (all: %v)", name, got[name], reason, got)
		}
	}
	human, _, err := plugin(t, "explain", "-l", "app=warn", "-n", upgradeNamespace)
	if err != nil || !strings.Contains(human, "SidecarSet warn: injected (Injected)") {
		t.Errorf("explain -l: %v\n%s", err, human)
	}
	t.Logf("explain:\n%s", human)

	// inject against the cluster renders the pod the server created, and prints the warning.
	podFile := filepath.Join(t.TempDir(), "warn.yaml")
	if err := os.WriteFile(podFile, []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	rendered, errOut, err := plugin(t, "inject", "-f", podFile, "-o", "json")
	if err != nil || !strings.Contains(errOut, want) {
		t.Fatalf("inject: %v, want the warning %q on stderr:\n%s", err, want, errOut)
	}
	injected := &corev1.Pod{}
	if err := json.Unmarshal([]byte(rendered), injected); err != nil {
		t.Fatalf("inject output: %v\n%s", err, rendered)
	}
	if got, want := containerLayout(injected), containerLayout(created); got != want {
		t.Errorf("inject renders containers %s, the server created %s", got, want)
	}

	// The server's own namespace is selected by no injection webhook: explain says it is excluded.
	file := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(file, []byte(strings.Replace(pod, "namespace: "+upgradeNamespace, "namespace: "+serverNamespace, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	excluded, errOut, err := plugin(t, "explain", "-f", file)
	if err != nil || !strings.Contains(excluded, "SidecarSet warn: not injected (NamespaceExcluded)") {
		t.Errorf("explain of a pod in an excluded namespace: %v\n%s%s", err, excluded, errOut)
	}
}

// containerLayout renders the init containers and the containers (with images) of a pod, in order.
func containerLayout(p *corev1.Pod) string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, "init:"+c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name+"="+c.Image)
	}
	return strings.Join(names, ",")
}

// TestVersion: the build stamps one version (hack/version.sh) into the server and the plugin; the
// server serves it on /version and as sidecarset_build_info, records it on the injection webhooks,
// and `kubectl sidecarset version` prints both.
func TestVersion(t *testing.T) {
	parallelTest(t)
	ldflags, err := exec.Command(filepath.Join(root, "hack", "version.sh")).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, f := range strings.Fields(string(ldflags)) {
		if v, ok := strings.CutPrefix(f, "github.com/sidecarset/apiserver/pkg/version.gitVersion="); ok {
			want = v
		}
	}
	if want == "" {
		t.Fatalf("hack/version.sh sets no gitVersion: %s", ldflags)
	}
	data, err := replicaClient(t, 1).Get().AbsPath("/version").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	var served struct{ GitVersion, GitCommit, GoVersion string }
	if err := json.Unmarshal(data, &served); err != nil || served.GitVersion != want || served.GitCommit == "" {
		t.Errorf("server /version %s (%v), want gitVersion %s and a commit", data, err, want)
	}
	if m := serverMetrics(t); !strings.Contains(m, `sidecarset_build_info{git_commit="`+served.GitCommit+`",git_version="`+want+`"`) {
		t.Errorf("metrics lack the build info of %s:\n%s", want, grepLines(m, "build_info"))
	}
	wantOut := "Client Version: " + want + "\nServer Version: " + want + "\n"
	// The leader records its version on its first reconcile. Every second: each try runs the plugin.
	if last, ok := pollEvery(time.Second, 30*time.Second, func(context.Context) (bool, string) {
		out, errOut, err := plugin(t, "version")
		return err == nil && out == wantOut, fmt.Sprintf("%v\n%s%s", err, out, errOut)
	}); !ok {
		t.Errorf("waited 30s for kubectl sidecarset version to print\n%s; last seen: %s", wantOut, last)
	}
}
