package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// pullLabel and pullFor are the label and annotation of the server's pull pods (pkg/predownload),
// written out here: the test checks them rather than take them from the code it tests.
const (
	pullLabel = "sidecarset.dev/image-predownload"
	pullFor   = "sidecarset.dev/image-predownload-for"
)

// TestPreDownload: a SidecarSet at maxUnavailable 100% with image pre-download at parallelism 1
// over six pods, two on each kwok node (kwok's pull pods take 2 s: hack/kwok/pod-stages.yaml
// pod-pull). Without pre-download the first round would upgrade all six at once; with it every
// pod waits (PreDownloading in the /rollout view) until its node's pull ended, the nodes pull one
// at a time (never two pull pods of the SidecarSet at once), each node once, and no pull pod is
// left once the rollout is done.
func TestPreDownload(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	ns := tempNamespace(t, "e2e-predownload-")
	const name = "e2e-predownload" // and the pods' app label
	ss := simpleSidecarSet(name, "busybox:1.36", ptr.To(intstr.FromString("100%")))
	ss.Annotations = map[string]string{"apps.kruise.io/image-predownload-parallelism": "1",
		"apps.kruise.io/image-predownload-timeout-seconds": "60"}
	createClusterSidecarSet(t, ss)
	nodes := []string{"kwok-node-0", "kwok-node-1", "kwok-node-2"}
	for i := range 6 {
		p := budgetPod(fmt.Sprintf("p-%d", i), ns, name)
		p.Spec.NodeName = nodes[i%3]
		if _, err := kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		mustHaveSidecar(t, waitPodRunning(t, ns, fmt.Sprintf("p-%d", i), true))
	}
	waitStatus(t, name, v1alpha1.SidecarSetStatus{MatchedPods: 6, UpdatedPods: 6, ReadyPods: 6, UpdatedReadyPods: 6})

	pulls := samplePulls(name)
	patchImage(t, name, `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	eventually(t, "pods waiting for their pre-download in the rollout view", 30*time.Second, func(ctx context.Context) (bool, string) {
		view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var states []string
		waiting := 0
		for _, p := range view.Status.Pods {
			states = append(states, fmt.Sprintf("%s %s/%s %s", p.Name, p.State, p.Reason, p.PreDownload))
			if p.State == v1alpha1.PodRolloutWaiting && p.Reason == "PreDownloading" && p.PreDownload == "PreDownloading" {
				waiting++
			}
		}
		return waiting > 0 && view.Status.PreDownloading == int32(waiting), fmt.Sprintf("preDownloading %d: %s", view.Status.PreDownloading, strings.Join(states, ", "))
	})
	eventually(t, "the SidecarSet's status counting pods that wait for their pull", 30*time.Second, func(ctx context.Context) (bool, string) {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ss.Status.PreDownloadingPods > 0, fmt.Sprintf("preDownloadingPods %d, preDownloadedPods %d", ss.Status.PreDownloadingPods, ss.Status.PreDownloadedPods)
	})
	eventually(t, "every pod upgraded", 2*time.Minute, func(ctx context.Context) (bool, string) {
		return upgradedIn(ctx, ns, name, "busybox:1.37", 6)
	})
	eventually(t, "the status counting no pull once the rollout is done", 30*time.Second, func(ctx context.Context) (bool, string) {
		ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return ss.Status.PreDownloadingPods == 0 && ss.Status.PreDownloadedPods == 0, fmt.Sprintf("preDownloadingPods %d, preDownloadedPods %d", ss.Status.PreDownloadingPods, ss.Status.PreDownloadedPods)
	})
	eventually(t, "no pull pod left", 30*time.Second, func(ctx context.Context) (bool, string) {
		list, err := kube.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{LabelSelector: pullLabel + "=true"})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, p := range list.Items {
			if p.Annotations[pullFor] == name {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, fmt.Sprintf("pull pods %v", left)
	})
	seen := pulls.stop()
	if seen.most != 1 {
		t.Errorf("at most %d pull pods ran at once, want 1 (the parallelism)", seen.most)
	}
	if diff := sortedKeys(seen.nodes); strings.Join(diff, ",") != strings.Join(nodes, ",") {
		t.Errorf("pull pods on nodes %v, want one on each of %v", diff, nodes)
	}
	for node, n := range seen.nodes {
		if n != 1 {
			t.Errorf("node %s had %d pull pods, want 1", node, n)
		}
	}
	// Each pod was upgraded after its node's pull ended: its sidecar restarted after the pull pod
	// of its node was created plus kwok's 2 s.
	for i := range 6 {
		p, err := kube.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("p-%d", i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := sidecar.ContainerStatus(p, "sidecar1")
		if st == nil || st.State.Running == nil {
			t.Fatalf("pod %s: sidecar1 not running: %+v", p.Name, st)
		}
		if pulled := seen.created[p.Spec.NodeName].Add(2 * time.Second); st.State.Running.StartedAt.Time.Before(pulled.Truncate(time.Second)) {
			t.Errorf("pod %s on %s: sidecar1 restarted at %s, before its node's pull ended (%s)", p.Name, p.Spec.NodeName,
				st.State.Running.StartedAt.Format(time.RFC3339), pulled.Format(time.RFC3339))
		}
	}
}

// pullSample is what samplePulls saw: the most pull pods that were not done at once, the pull pods
// by node, and when the first of each node was created.
type pullSample struct {
	most    int
	nodes   map[string]int
	created map[string]time.Time
}

type pullSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   pullSample
}

func (s *pullSampler) stop() pullSample {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// samplePulls lists, ten times a second, the pull pods of SidecarSet name in the server's
// namespace until stop.
func samplePulls(name string) *pullSampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &pullSampler{cancel: cancel, done: make(chan struct{}), seen: pullSample{nodes: map[string]int{}, created: map[string]time.Time{}}}
	names := map[string]bool{}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			list, err := kube.CoreV1().Pods(serverNamespace).List(ctx, metav1.ListOptions{LabelSelector: pullLabel + "=true"})
			if err == nil {
				running := 0
				s.mu.Lock()
				for _, p := range list.Items {
					if p.Annotations[pullFor] != name {
						continue
					}
					if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
						running++
					}
					if !names[p.Name] {
						names[p.Name] = true
						s.seen.nodes[p.Spec.NodeName]++
						if _, ok := s.seen.created[p.Spec.NodeName]; !ok {
							s.seen.created[p.Spec.NodeName] = p.CreationTimestamp.Time
						}
					}
				}
				s.seen.most = max(s.seen.most, running)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return s
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
