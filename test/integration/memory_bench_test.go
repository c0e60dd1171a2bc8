package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sidecarset/apiserver/cmd/apiserver/app"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// BenchmarkServerHeapPerSidecarSet (make bench-heap) measures what each stored SidecarSet costs
// the heap of a server in this process: E2E-free, so that a change of what the server keeps shows
// at once. BENCH_SIDECARSETS (1000) SidecarSets of the manual's shape (one key, one container, an
// env var), created as `kubectl apply` does (its last-applied annotation, its field manager), then
// the live heap after a collection, less the heap before, per SidecarSet, as heap-KiB/sidecarset.
// The embedded etcd runs in this process too, so both cases count its share; "watch-cache" is the
// server with the watch cache on for its resources, as before WatchCacheSizes, for comparison.
// No main cluster: no controller, revisions or status writes (the e2e curves measure those).
func BenchmarkServerHeapPerSidecarSet(b *testing.B) {
	n := 1000
	if v := os.Getenv("BENCH_SIDECARSETS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		opts []framework.Option
	}{
		{name: "default"},
		{name: "watch-cache", opts: []framework.Option{func(o *app.Options) { o.RecommendedOptions.Etcd.WatchCacheSizes = nil }}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.ReportMetric(heapPerSidecarSet(b, n, tc.opts)/1024, "heap-KiB/sidecarset")
			}
		})
	}
}

// heapPerSidecarSet starts a server, stores n SidecarSets and returns the live heap they added,
// in bytes per SidecarSet.
func heapPerSidecarSet(b *testing.B, n int, opts []framework.Option) float64 {
	srv := framework.StartServer(b, opts...)
	ctx := context.Background()
	before := liveHeap()
	sets := srv.Client.AppsV1alpha1().SidecarSets()
	for i := 0; i < n; i++ {
		ss := manualShaped(b, i)
		if _, err := sets.Create(ctx, ss, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
			b.Fatal(err)
		}
	}
	// The server's informers hold them once a list sees them all and their watch events are in.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := sets.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == n, nil
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	return float64(liveHeap()-before) / float64(n)
}

// manualShaped is the i-th SidecarSet of the manual's shape, as kubectl apply sends it.
func manualShaped(b *testing.B, i int) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SidecarSet"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%05d", i)},
		Spec: v1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bench": fmt.Sprintf("other-%d", i)}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("other-%d", i), Image: "busybox:1.36",
				Env: []corev1.EnvVar{{Name: "ROLE", Value: "bench"}}}}},
		},
	}
	applied, err := json.Marshal(ss)
	if err != nil {
		b.Fatal(err)
	}
	ss.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(applied)}
	return ss
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
