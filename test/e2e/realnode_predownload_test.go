package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
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
// without pre-download, then the second with it (parallelism 1). Each pod's unavailability (its
// Ready condition False, sampled every 50 ms) is measured: without pre-download the first pod waits
// for the pull and the restart, the others (the image is then on the node) for the restart only;
// with it no pod waits longer than a restart without pull did (plus one probe period), the first
// pod's unavailability drops below the pull's, and no pull pod is left.
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
			t.Errorf("with pre-download a pod was unavailable for %s, more than a restart without pull (%s) plus a probe period", d, restartOnly)
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
// samples its n pods every 50 ms until each runs it, ready: how long each pod's Ready condition
// was False.
func measureRollout(t *testing.T, name, image string, n int) rolloutFigures {
	t.Helper()
	patchImage(t, name, fmt.Sprintf(`{"spec":{"containers":[{"name":"sidecar1","image":%q}]}}`, image))
	start := time.Now()
	down := map[string]time.Time{}
	total := map[string]time.Duration{}
	var order []string
	eventuallyEvery(t, "the rollout to "+image, 50*time.Millisecond, rolloutTimeout, func(ctx context.Context) (bool, string) {
		now := time.Now()
		ps := listRealPods(t, name)
		done := 0
		for _, p := range ps {
			ready := podIsReady(p)
			if at, ok := down[p.Name]; ok && ready {
				total[p.Name] += now.Sub(at)
				delete(down, p.Name)
			} else if !ok && !ready {
				down[p.Name] = now
				if _, seen := total[p.Name]; !seen {
					order = append(order, p.Name)
					total[p.Name] = 0
				}
			}
			if st := sidecar.ContainerStatus(p, "sidecar1"); ready && st != nil && st.Ready && st.ImageID != "" &&
				sidecar.FindPodContainer(p, "sidecar1").Image == image && st.State.Running != nil && total[p.Name] > 0 {
				done++
			}
		}
		return done == n && len(down) == 0, fmt.Sprintf("%d of %d upgraded, %d unavailable", done, n, len(down))
	})
	f := rolloutFigures{took: time.Since(start)}
	for _, p := range order {
		f.unavailable = append(f.unavailable, total[p])
	}
	return f
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
