package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// The suite runs in two phases on one cluster. The serial phase comes first: tests that restart,
// reconfigure or uninstall something (the server, its etcd, kube-apiserver, the injection mode,
// the shipped deployment) or that need every SidecarSet of the cluster to be theirs, one at a
// time, in Go's order. Then the parallel phase: every test that calls parallelTest, concurrently
// (up to go test's -parallel), each in its own namespace with its own names. A parallel test that
// shares a fixture with others (the conformance catalogue's namespace and whitelist, the manual's
// example in namespace default) names it, and tests naming the same fixture take turns.

var phases struct {
	mu            sync.Mutex
	start         time.Time // the cluster is up
	parallelStart time.Time // the first parallel test resumed
	parallel      []string
}

// parallelTest marks t as a parallel-phase test holding the named fixtures (taken in sorted order,
// so that two tests naming the same fixtures never wait for each other in a cycle).
func parallelTest(t *testing.T, fixtures ...string) {
	t.Helper()
	t.Parallel()
	parallelPhase.Do(func() {
		// The serial phase's tests leave their SidecarSets behind: the parallel phase starts
		// without any.
		deleteAllSidecarSets(t)
		phases.mu.Lock()
		phases.parallelStart = time.Now()
		phases.mu.Unlock()
	})
	phases.mu.Lock()
	phases.parallel = append(phases.parallel, t.Name())
	phases.mu.Unlock()
	sort.Strings(fixtures)
	for _, f := range fixtures {
		m := fixtureLock(f)
		m.Lock()
		t.Cleanup(m.Unlock)
	}
}

var parallelPhase sync.Once

var fixtureLocks sync.Map // fixture name -> *sync.Mutex

func fixtureLock(name string) *sync.Mutex {
	m, _ := fixtureLocks.LoadOrStore(name, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// Fixtures that parallel tests share.
const (
	// fixtureManualExample: the manual's SidecarSet test-sidecarset and its pod default/test-pod.
	fixtureManualExample = "manual-example"
	// fixtureRealNode: the real node and its namespace sidecarset-realnode.
	fixtureRealNode = "real-node"
	// fixtureWhitelist: the patchPodMetadata whitelist ConfigMap.
	fixtureWhitelist = "whitelist"
)

// inParallelPhase reports whether the parallel phase has begun: from then on nothing may restart,
// reconfigure or clear the cluster, since other tests are running on it.
func inParallelPhase() bool {
	phases.mu.Lock()
	defer phases.mu.Unlock()
	return !phases.parallelStart.IsZero()
}

// serialOnly fails t when called in the parallel phase: what follows (a restart, a mode switch,
// deleting every SidecarSet) would pull the cluster from under the tests running beside it.
func serialOnly(t *testing.T, what string) {
	t.Helper()
	if inParallelPhase() {
		t.Fatalf("%s in the parallel phase would disturb the tests running beside %s; run it in the serial phase", what, t.Name())
	}
}

// reportPhases prints how long each phase took, for the suite's timing report.
func reportPhases(end time.Time) {
	phases.mu.Lock()
	defer phases.mu.Unlock()
	serialEnd := phases.parallelStart
	if serialEnd.IsZero() {
		serialEnd = end
	}
	var b strings.Builder
	fmt.Fprintf(&b, "e2e phases: serial %s, parallel %s (%d parallel tests)\n",
		serialEnd.Sub(phases.start).Round(time.Second), end.Sub(serialEnd).Round(time.Second), len(phases.parallel))
	fmt.Fprint(os.Stdout, b.String())
}

// startOver gives a test a clean start. In the serial phase the cluster is the test's alone: no
// SidecarSet at all, no pod in ns. In the parallel phase other tests' objects live beside it: none
// of its own SidecarSets (names), none of its pods (those of ns matching selector; "" is every pod
// of ns, for a namespace that a fixture gives the test alone).
func startOver(t *testing.T, ns, selector string, names ...string) {
	t.Helper()
	if !inParallelPhase() {
		deleteAllSidecarSets(t)
		ensureNamespace(t, ns)
		cleanNamespace(t, ns)
		return
	}
	deleteSidecarSets(t, names...)
	ensureNamespace(t, ns)
	cleanPods(t, ns, selector)
}

// deleteSidecarSets deletes the named SidecarSets (absent ones are fine) and waits until they are
// gone.
func deleteSidecarSets(t *testing.T, names ...string) {
	t.Helper()
	client := sidecars.AppsV1alpha1().SidecarSets()
	for _, name := range names {
		if err := client.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting SidecarSet %s: %v", name, err)
		}
	}
	eventually(t, "SidecarSets "+strings.Join(names, ", ")+" deleted", time.Minute, func(ctx context.Context) (bool, string) {
		for _, name := range names {
			if _, err := client.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, fmt.Sprintf("%s still there (%v)", name, err)
			}
		}
		return true, ""
	})
}

// cleanPods deletes the pods of ns matching selector at once and waits until they are gone.
func cleanPods(t *testing.T, ns, selector string) {
	t.Helper()
	pods := kube.CoreV1().Pods(ns)
	eventually(t, fmt.Sprintf("no pod %q in %s", selector, ns), 5*time.Minute, func(ctx context.Context) (bool, string) {
		_ = pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{LabelSelector: selector})
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items))
	})
}

// eventually polls cond every 200 ms until it holds or timeout passes, then fails t with what and
// the last state cond described: the one wait of the suite, which the domain waits build on.
func eventually(t *testing.T, what string, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	eventuallyEvery(t, what, pollInterval, timeout, cond)
}

// eventuallyEvery is eventually polling every interval: longer for a cond whose every try is
// expensive (it runs kubectl or the plugin, or creates objects), shorter where the test measures
// how soon something happens.
func eventuallyEvery(t *testing.T, what string, interval, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	if last, ok := pollEvery(interval, timeout, cond); !ok {
		t.Fatalf("waited %s for %s; last seen: %s", timeout, what, last)
	}
}

// pollInterval is how often eventually and poll try their condition.
const pollInterval = 200 * time.Millisecond

// poll is eventually for a caller that adds its own diagnostics on failure: it reports whether
// cond held within timeout, and the last state cond described.
func poll(timeout time.Duration, cond func(ctx context.Context) (bool, string)) (string, bool) {
	return pollEvery(pollInterval, timeout, cond)
}

// pollEvery is poll trying cond every interval (see eventuallyEvery).
func pollEvery(interval, timeout time.Duration, cond func(ctx context.Context) (bool, string)) (string, bool) {
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen := cond(ctx)
		if ctx.Err() == nil || last == "" { // a try the timeout cut off says less than the one before
			last = seen
		}
		return ok, nil
	})
	return last, err == nil
}

// consistently polls cond every interval for d and fails t with what the first time it does not
// hold: the wait of a test whose point is that a state lasts (a rollout stays stalled, a budget
// is never exceeded), which a single look after a sleep would check at one moment only.
func consistently(t *testing.T, what string, interval, d time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	start := time.Now()
	var broke string
	_ = wait.PollUntilContextTimeout(context.Background(), interval, d, true, func(context.Context) (bool, error) {
		// Each look has its own deadline: the last one must not be cut off by the end of d.
		ctx, cancel := context.WithTimeout(context.Background(), max(interval, 10*time.Second))
		defer cancel()
		if ok, seen := cond(ctx); !ok {
			broke = fmt.Sprintf("%s stopped holding after %s of %s: %s", what, time.Since(start).Round(time.Millisecond), d, seen)
			return true, nil
		}
		return false, nil
	})
	if broke != "" {
		t.Fatal(broke)
	}
}

// nextSecond returns once the wall clock is in a later whole second than when it was called:
// creation timestamps have a one-second resolution, and a test that needs an object created
// strictly after another cannot observe the second turning any other way.
func nextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now) + 10*time.Millisecond)
}
