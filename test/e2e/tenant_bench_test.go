package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/sidecarset/apiserver/pkg/admission/policy/policytest"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestTenantScale measures the server with E2E_TENANT_BENCH NamespacedSidecarSets (make
// bench-tenants: 5,000) spread over 50 namespaces beside E2E_BENCH_SETS cluster SidecarSets
// (1,000, the manual's one-key shape), in policy mode: the time to create and settle the tenants'
// objects, the server's resident set afterwards, the p50 of a SidecarSet create with all of them
// stored, and what a pod of a namespace with none of them pays (added p50 and p99 of a dry-run
// create over the same pod in a namespace the server excludes).
func TestTenantScale(t *testing.T) {
	n := envInt("E2E_TENANT_BENCH", 0)
	if n == 0 {
		t.Skip("set E2E_TENANT_BENCH=<NamespacedSidecarSets> to measure the server with tenants")
	}
	const namespaces = 50
	deleteAllSidecarSets(t)
	defer deleteAllSidecarSets(t)
	ensureNamespace(t, "bench")
	for i := 0; i < namespaces; i++ {
		ensureNamespace(t, tenantBenchNamespace(i))
	}
	rssEmpty := serverRSS(t)
	applied := applyAll(t, policytest.BenchSidecarSets(policytest.ShapeOneKey, envInt("E2E_BENCH_SETS", 1000)))
	rssCluster := serverRSS(t)

	start := time.Now()
	createTenantSets(t, n, namespaces)
	created := time.Since(start)
	settleTenantSets(t, 15*time.Minute)
	settled := time.Since(start)
	rss := steadyRSS(t) // the resident set once the runtime has returned what it will

	p50, cpu := timeSidecarSetCreates(t, policytest.ShapeOneKey, envInt("E2E_BENCH_SETS", 1000), 20)

	client := unthrottled()
	bare := benchPod(bareLabels).withNamespace(serverNamespace)
	plain := benchPod(map[string]string{"bench-nokey": "x"}).withNamespace("bench")
	var latBare, latPlain []time.Duration
	timeCreates(t, client, bare, 50) // warm
	timeCreates(t, client, plain, 50)
	for round := 0; round < 10; round++ {
		latBare = append(latBare, timeCreates(t, client, bare, 100)...)
		latPlain = append(latPlain, timeCreates(t, client, plain, 100)...)
	}
	p50b, p99b := percentiles(latBare)
	p50p, p99p := percentiles(latPlain)
	fmt.Printf("tenants: %d cluster SidecarSets applied in %v; %d NamespacedSidecarSets in %d namespaces created in %v, settled in %v\n",
		envInt("E2E_BENCH_SETS", 1000), applied.apply.Round(time.Millisecond), n, namespaces, created.Round(time.Millisecond), settled.Round(time.Millisecond))
	fmt.Printf("tenants: server RSS %s empty, %s with the cluster SidecarSets, %s with the tenants too\n", mib(rssEmpty), mib(rssCluster), mib(rss))
	fmt.Printf("tenants: SidecarSet create p50 %v, kube-apiserver CPU %v per create\n", p50.Round(100*time.Microsecond), cpu.Round(time.Millisecond))
	fmt.Printf("tenants: a pod of a namespace without NamespacedSidecarSets: added p50 %v p99 %v (bare p50 %v p99 %v)\n",
		p50p-p50b, p99p-p99b, p50b, p99b)
}

func tenantBenchNamespace(i int) string { return fmt.Sprintf("bench-team-%02d", i) }

// createTenantSets creates n NamespacedSidecarSets, round robin over the namespaces, 8 at a time;
// each selects an app value of its own, as a team's agents do.
func createTenantSets(t *testing.T, n, namespaces int) {
	t.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for i := range next {
				nss := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("agent-%04d", i)},
					Spec: v1alpha1.SidecarSetSpec{
						Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("team-app-%d", i)}},
						Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: fmt.Sprintf("agent-%d", i), Image: "busybox:1.36"}}},
					}}
				ns := tenantBenchNamespace(i % namespaces)
				if _, err := sidecars.AppsV1alpha1().NamespacedSidecarSets(ns).Create(context.Background(), nss, metav1.CreateOptions{}); err != nil {
					select {
					case errs <- fmt.Errorf("create %s/%s: %w", ns, nss.Name, err):
					default:
					}
				}
			}
		})
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// settleTenantSets waits until the controller observed the generation of every stored
// NamespacedSidecarSet.
func settleTenantSets(t *testing.T, timeout time.Duration) {
	t.Helper()
	// Read in pages, every second, as settleAll does: at 50,000 one response every poll held the
	// measured server at 2.9 GiB.
	eventuallyEvery(t, "every NamespacedSidecarSet settled", time.Second, timeout, func(ctx context.Context) (bool, string) {
		unsettled, total := 0, 0
		err := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return sidecars.AppsV1alpha1().NamespacedSidecarSets(metav1.NamespaceAll).List(ctx, opts)
		}).EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			total++
			if nss := obj.(*v1alpha1.NamespacedSidecarSet); nss.Status.ObservedGeneration != nss.Generation {
				unsettled++
			}
			return nil
		})
		if err != nil {
			return false, err.Error()
		}
		return unsettled == 0, fmt.Sprintf("%d of %d not settled", unsettled, total)
	})
}
