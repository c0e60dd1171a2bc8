package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestNoGapWhenPathsChange creates pods continuously (server-side dry runs, one client per
// SidecarSet) while the SidecarSets move between the webhook and policies: the server restarted
// into webhook mode and back into policy mode, the policies regrouped by SidecarSets added with
// other values of the same key, and a new image. Every pod that is admitted carries its
// SidecarSet's sidecar (a pod may be refused while the webhook path has no server, never created
// bare).
//
// Each restart also applies the shipped webhook template again (hack/local-up.sh registers the
// server), as an upgrade or a GitOps sync would. make e2e-moves runs it five times in a row.
func TestNoGapWhenPathsChange(t *testing.T) {
	ctx := context.Background()
	deleteAllSidecarSets(t)
	t.Cleanup(func() { deleteAllSidecarSets(t) })
	client := sidecars.AppsV1alpha1().SidecarSets()
	const n = 3
	for i := 0; i < n; i++ {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("moves-%d", i)},
			Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"moves": fmt.Sprint(i)}},
				Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("moves-%d", i), Image: "busybox:1"}}}}}
		if _, err := client.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		waitSettled(t, fmt.Sprintf("moves-%d", i))
	}
	var created, refused, bare atomic.Int64
	var mu sync.Mutex
	var failures []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := nginxPod("default", fmt.Sprintf("moves-%d", i))
			pod.Labels = map[string]string{"moves": fmt.Sprint(i)}
			pace := time.NewTicker(20 * time.Millisecond) // the load's pace
			defer pace.Stop()
			for {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				got, err := kube.CoreV1().Pods("default").Create(ctx, pod.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				switch {
				case err != nil:
					refused.Add(1)
				case !hasContainer(got, fmt.Sprintf("moves-%d", i)):
					bare.Add(1)
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: pod for moves-%d created without its sidecar (annotations %v, containers %d)",
						time.Now().Format(time.StampMilli), i, got.Annotations, len(got.Spec.Containers)))
					mu.Unlock()
				default:
					created.Add(1)
				}
			}
		}()
	}
	step := func(what string, do func()) {
		t.Logf("%s: %s (so far %d injected, %d refused, %d bare)", time.Now().Format(time.StampMilli), what, created.Load(), refused.Load(), bare.Load())
		do()
		// What is tested: the pods created after the move, about 50 by each client.
		since := created.Load() + refused.Load() + bare.Load()
		eventually(t, "50 creates by each client after: "+what, time.Minute, func(context.Context) (bool, string) {
			done := created.Load() + refused.Load() + bare.Load() - since
			return done >= int64(50*n), fmt.Sprintf("%d creates", done)
		})
	}
	step("restart into webhook mode", func() { restartServer(t, "webhook") })
	step("restart into policy mode", func() { restartServer(t, "policy") })
	step("regroup: 40 more values of the key", func() {
		for j := 0; j < 40; j++ {
			ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("moves-extra-%02d", j)},
				Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"moves": fmt.Sprintf("extra-%d", j)}},
					Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("extra-%d", j), Image: "busybox:1"}}}}}
			if _, err := client.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
		}
		waitSettled(t, "moves-extra-39")
	})
	step("a new image", func() { patchImage(t, "moves-1", `{"spec":{"containers":[{"name":"moves-1","image":"busybox:2"}]}}`) })
	close(stop)
	wg.Wait()
	t.Logf("%d pods injected, %d refused, %d created without their sidecar", created.Load(), refused.Load(), bare.Load())
	if created.Load() == 0 {
		t.Fatal("no pod was admitted")
	}
	for _, f := range failures {
		t.Error(f)
	}
}
