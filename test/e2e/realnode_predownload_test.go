package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// bigImageMiB is the size of the random layer of the large sidecar images (TestRealNodePreDownload).
const bigImageMiB = 200

// TestRealNodePreDownload: a local OCI registry on loopback (hack/release/cmd/testregistry, in
// memory) serves two large sidecar images, the test image v2 with a layer of bigImageMiB MiB of
// random bytes each (their own, so each is pulled anew); the real node's containerd pulls them over
// plain HTTP. A SidecarSet at maxUnavailable 1 over three pods on the real node rolls out the first
// without pre-download, then the second with it (parallelism 1). Each pod's unavailability (how
// long its sidecar did not answer, probed every 20 ms) is measured: without pre-download the first
// pod waits for the pull and the restart, the others (the image is then on the node) for the
// restart only; with it no pod waits more than a second longer than the fastest restart without,
// and one pull pod ran, gone afterwards.
func TestRealNodePreDownload(t *testing.T) {
	parallelTest(t, fixtureRealNode)
	requireRealNode(t, true)
	ctx := context.Background()
	refs := startTestRegistry(t, "sidecar:big-off", "sidecar:big-on")
	const name, n = "rn-predownload", 3
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	// v1 is imported, not pulled; the registry's images are pulled. The policy cannot change in
	// place, so it is IfNotPresent from the start.
	ss.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, realPod(fmt.Sprintf("%s-%d", name, i), name))
	}
	setupRealNode(t, ss, pods...)

	off := measureRollout(t, name, refs["sidecar:big-off"], n)
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Patch(ctx, name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"apps.kruise.io/image-predownload-parallelism":"1","apps.kruise.io/image-predownload-timeout-seconds":"120"}}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pulls := samplePulls(name)
	on := measureRollout(t, name, refs["sidecar:big-on"], n)
	eventually(t, "no pull pod left", time.Minute, func(ctx context.Context) (bool, string) {
		list, err := kube.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{LabelSelector: pullLabel + "=true"})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pull pods", len(list.Items))
	})
	seen := pulls.stop()
	t.Logf("unavailable per pod, in upgrade order, without pre-download: %s (rollout %s)", off, off.took.Round(100*time.Millisecond))
	t.Logf("unavailable per pod, in upgrade order, with pre-download:    %s (rollout %s)", on, on.took.Round(100*time.Millisecond))
	if seen.nodes["real-node-0"] != 1 || seen.most != 1 {
		t.Errorf("pull pods: %v by node, at most %d at once; want one on real-node-0", seen.nodes, seen.most)
	}
	restartOnly := off.sorted()[0] // the fastest of the rollout without: a pod whose image was on the node
	pulled := off.sorted()[n-1]    // the slowest: the pod that waited for the pull
	if pulled < restartOnly+time.Second {
		t.Fatalf("without pre-download no pod waited a second longer than a restart (%s, %s): the pull of %d MiB is too fast to measure", pulled, restartOnly, bigImageMiB)
	}
	for _, d := range on.unavailable {
		if d > restartOnly+time.Second {
			t.Errorf("with pre-download a sidecar did not answer for %s, more than a restart without pull (%s) plus a second", d, restartOnly)
		}
	}
}

// rolloutFigures are the per-pod unavailability of a rollout, in upgrade order.
type rolloutFigures struct {
	unavailable []time.Duration
	took        time.Duration
}

func (f rolloutFigures) String() string {
	var s []string
	for _, d := range f.unavailable {
		s = append(s, d.Round(10*time.Millisecond).String())
	}
	return strings.Join(s, ", ")
}

func (f rolloutFigures) sorted() []time.Duration {
	out := append([]time.Duration(nil), f.unavailable...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// measureRollout sets sidecar1's image of SidecarSet name to image (pulled if not present) and
// measures, for each of its n pods, how long its sidecar did not answer: the test probes each
// pod's sidecar1 (/ready on 8081, through the node's pod bridge) every 20 ms during the rollout,
// which ends once every pod runs image, ready. The pods' Ready condition, sampled through the API,
// did not show the pull: the kubelet reported no status while it pulled.
func measureRollout(t *testing.T, name, image string, n int) rolloutFigures {
	t.Helper()
	probes := map[string]*downtime{}
	for _, p := range listRealPods(t, name) {
		probes[p.Name] = probeSidecar(p.Status.PodIP + ":8081")
	}
	patchImage(t, name, fmt.Sprintf(`{"spec":{"containers":[{"name":"sidecar1","image":%q}]}}`, image))
	start := time.Now()
	eventually(t, "the rollout to "+image, rolloutTimeout, func(ctx context.Context) (bool, string) {
		done := 0
		for _, p := range listRealPods(t, name) {
			if st := sidecar.ContainerStatus(p, "sidecar1"); podIsReady(p) && st != nil && st.Ready && st.State.Running != nil &&
				sidecar.FindPodContainer(p, "sidecar1").Image == image && st.ImageID != "" && probes[p.Name].answers() {
				done++
			}
		}
		return done == n, fmt.Sprintf("%d of %d upgraded", done, n)
	})
	f := rolloutFigures{took: time.Since(start)}
	var all []*downtime
	for _, d := range probes {
		d.stop()
		all = append(all, d)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].first.Before(all[j].first) })
	for _, d := range all {
		f.unavailable = append(f.unavailable, d.total)
	}
	return f
}

// downtime is what probeSidecar measured of one sidecar.
type downtime struct {
	mu     sync.Mutex
	ok     bool
	first  time.Time // the first failed probe
	total  time.Duration
	cancel context.CancelFunc
	done   chan struct{}
}

func (d *downtime) answers() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.ok }

func (d *downtime) stop() { d.cancel(); <-d.done }

// probeSidecar GETs http://addr/ready every 20 ms until stop and sums the time from each failed
// probe after a good one to the next good one.
func probeSidecar(addr string) *downtime {
	ctx, cancel := context.WithCancel(context.Background())
	d := &downtime{ok: true, cancel: cancel, done: make(chan struct{})}
	client := &http.Client{Timeout: 200 * time.Millisecond}
	go func() {
		defer close(d.done)
		var downSince time.Time
		for ctx.Err() == nil {
			at := time.Now()
			resp, err := client.Get("http://" + addr + "/ready")
			ok := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				resp.Body.Close()
			}
			d.mu.Lock()
			switch {
			case !ok && downSince.IsZero():
				downSince = at
				if d.first.IsZero() {
					d.first = at
				}
			case ok && !downSince.IsZero():
				d.total += at.Sub(downSince)
				downSince = time.Time{}
			}
			d.ok = ok
			d.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return d
}

// startTestRegistry builds and starts hack/release/cmd/testregistry on loopback with the real
// node's test image v2 as the base of each image, and returns the images' references by the
// given repository:tag. It stops with the test.
func startTestRegistry(t *testing.T, images ...string) map[string]string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "testregistry")
	build := exec.Command("go", "build", "-o", bin, "./cmd/testregistry")
	build.Dir = filepath.Join(root, "hack", "release")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building testregistry: %v\n%s", err, out)
	}
	args := []string{"-addr", "127.0.0.1:0", "-size", fmt.Sprint(bigImageMiB),
		"-base", filepath.Join(localState(), "node", "images", "test-v2.oci")}
	for _, i := range images {
		args = append(args, "-image", i)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	// It dies with the test process, however that ends: it would otherwise keep what it inherited
	// (the real node's lock, taken around make e2e-node) for ever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	refs := map[string]string{}
	var once sync.Once
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "image" {
				refs[f[1][strings.Index(f[1], "/")+1:]] = f[1]
			}
			if len(f) == 1 && f[0] == "ready" {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(3 * time.Minute):
		t.Fatal("the test registry did not push its images within 3 minutes")
	}
	return refs
}
