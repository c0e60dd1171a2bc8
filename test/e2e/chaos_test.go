package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The chaos test's size: E2E_CHAOS_PODS pods (default 100) and E2E_CHAOS_KILLS leader kills
// (default 2) in make test; make chaos runs 1,000 pods and 5 kills. E2E_CHAOS_SEED fixes the
// random kill moments (the seed is logged).
const (
	chaosName       = "chaos"
	chaosDelay      = "4s" // the fake kubelet's in-place restart time (kwok.x-k8s.io/image-change-delay)
	chaosSampleTick = 250 * time.Millisecond
	chaosHoldAt     = 90 // percent of the pods the leader-killed rollout upgrades before its last kill
)

// TestChaosRollout rolls a new sidecar image over the same pods three times at maxUnavailable 10%,
// each time with a fault in the middle: kube-apiserver down until the leader's term ends (a
// new one starts once it is back), the server's etcd stopped for a
// while, and the leading server replica killed (SIGKILL) at random moments, each time while a
// second replica runs; the rollout goes on while the server's etcd is down. A monitor samples every pod four times a second from a watch. Each time the
// rollout completes; at no sample are more pods unavailable than maxUnavailable; afterwards every
// pod runs the new sidecar, ready, restarted exactly once, with the SidecarSet's hash, and no pod
// ever has a container twice or one too many.
func TestChaosRollout(t *testing.T) {
	n := envInt("E2E_CHAOS_PODS", 100)
	kills := envInt("E2E_CHAOS_KILLS", 2)
	ss := simpleSidecarSet(chaosName, "busybox:1.36", ptr.To(intstr.FromString("10%")))
	prepareScale(t, ss, n, map[string]string{"kwok.x-k8s.io/image-change-delay": chaosDelay})
	waitStatusFor(t, chaosName, n, 10*time.Minute)
	limit := (n + 9) / 10 // maxUnavailable 10% of n, rounded up
	mon := startRolloutMonitor(t, chaosName, []string{"app", "helper", "sidecar1"})

	faults := []struct {
		name  string
		image string
		hold  bool // a standby replica before the rollout, and the partition holds its last tenth
		fault func(t *testing.T, r *chaosRollout)
	}{
		{"kube-apiserver restarted", "busybox:1.37", false, func(t *testing.T, r *chaosRollout) {
			// Down for longer than the Lease's renew deadline (10 s): the leader's term ends with
			// writes in flight, and a new term starts from the cache once kube-apiserver is back.
			r.waitProgress(t, n/3)
			r.localUp(t, "stop-kube-apiserver")
			// What is tested: an outage the leader's term does not outlive.
			eventually(t, "the leader's term to end without kube-apiserver", 2*time.Minute, func(context.Context) (bool, string) {
				return !leadsByLog(t, 1), "the log of replica 1, the only one, says it still leads"
			})
			r.localUp(t, "start-kube-apiserver")
		}},
		{"server etcd stopped", "busybox:1.38", false, func(t *testing.T, r *chaosRollout) {
			r.waitProgress(t, n/3)
			r.localUp(t, "stop-server-etcd")
			stopped := r.mon.progress()
			// The pods live in the main cluster: the rollout goes on without the server's etcd.
			if _, ok := poll(time.Minute, func(context.Context) (bool, string) { return r.mon.progress() > stopped, "" }); !ok {
				t.Errorf("no pod was upgraded in the minute the server's etcd was down")
			}
			r.localUp(t, "start-server-etcd")
		}},
		{"leader killed", "busybox:1.39", true, func(t *testing.T, r *chaosRollout) {
			// Each kill costs a Lease takeover and a restart (30 s and more on a loaded machine),
			// longer than the rest of a 100-pod rollout: a partition holds its last tenth until
			// the last kill, so every kill strikes while the rollout is under way.
			killLeaders(t, r, kills)
			patchImage(t, chaosName, `{"spec":{"updateStrategy":{"partition":0}}}`)
		}},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			r := &chaosRollout{mon: mon, n: n, image: f.image, restarts: mon.restartCounts()}
			patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"sidecar1","image":%q}]}}`, f.image)
			if f.hold {
				startSecondReplica(t) // before the rollout starts: a standby is there for the first kill
				patch = fmt.Sprintf(`{"spec":{"containers":[{"name":"sidecar1","image":%q}],"updateStrategy":{"partition":"%d%%"}}}`, f.image, 100-chaosHoldAt)
			}
			mon.reset(f.image)
			patchImage(t, chaosName, patch)
			f.fault(t, r)
			waitStatusFor(t, chaosName, n, 15*time.Minute)
			r.check(t, limit)
		})
	}
}

// killLeaders, with a second replica running, kills whichever replica leads at `kills` random
// moments of the rollout (random shares of the pods upgraded) and starts it again at once, so a
// standby is always there to take the Lease over.
func killLeaders(t *testing.T, r *chaosRollout, kills int) {
	seed := uint64(time.Now().UnixNano())
	if s := envInt("E2E_CHAOS_SEED", 0); s > 0 {
		seed = uint64(s)
	}
	rnd := rand.New(rand.NewPCG(seed, seed))
	moments := make([]int, kills)
	for i := range moments {
		moments[i] = r.n/20 + rnd.IntN(r.n*(chaosHoldAt-5)/100) // between 5% and chaosHoldAt% of the pods upgraded
	}
	sort.Ints(moments)
	t.Logf("E2E_CHAOS_SEED=%d: kill the leader once %v of %d pods are upgraded", seed, moments, r.n)
	for _, at := range moments {
		r.waitProgress(t, at)
		leader, _ := waitLeader(t, []int{1, 2}, 4*leaseDuration)
		if err := syscall.Kill(serverPID(t, leader), syscall.SIGKILL); err != nil {
			t.Fatalf("kill replica %d: %v", leader, err)
		}
		t.Logf("killed replica %d (the leader) with %d of %d pods upgraded", leader, r.mon.progress(), r.n)
		if leader == 1 {
			r.localUp(t, "restart-server")
		} else {
			r.localUp(t, "start-replica")
		}
	}
}

// chaosRollout is one rollout of TestChaosRollout.
type chaosRollout struct {
	mon      *rolloutMonitor
	n        int
	image    string
	restarts map[string]int32 // sidecar1's restart count per pod before the rollout
}

// waitProgress waits until at least `upgraded` pods run the new image, ready, and fails the test
// if the rollout already finished (the fault would no longer be in the middle of it).
func (r *chaosRollout) waitProgress(t *testing.T, upgraded int) {
	t.Helper()
	// Every 100 ms (the monitor's count is local): the fault is to strike close to that moment.
	eventuallyEvery(t, fmt.Sprintf("%d of %d pods upgraded", upgraded, r.n), 100*time.Millisecond, 10*time.Minute, func(context.Context) (bool, string) {
		got := r.mon.progress()
		return got >= upgraded, fmt.Sprintf("%d upgraded", got)
	})
	if got := r.mon.progress(); got >= r.n {
		t.Fatalf("the rollout finished before the fault (%d of %d pods upgraded)", got, r.n)
	}
}

func (r *chaosRollout) localUp(t *testing.T, cmd string) {
	t.Helper()
	start := time.Now()
	if _, err := localUp(cmd); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s with %d of %d pods upgraded, took %v", cmd, r.mon.progress(), r.n, time.Since(start).Round(100*time.Millisecond))
}

// check asserts what the monitor saw and the pods' final state.
func (r *chaosRollout) check(t *testing.T, limit int) {
	t.Helper()
	ss := waitSettled(t, chaosName)
	report := r.mon.report()
	t.Logf("%d samples, largest gap %v, at most %d pods unavailable (maxUnavailable %d)", report.samples,
		report.largestGap.Round(time.Millisecond), report.worst, limit)
	if report.worst > limit {
		t.Errorf("%d pods were unavailable at once at %s, maxUnavailable is %d", report.worst, report.worstAt.Format(time.StampMilli), limit)
	}
	for _, bad := range report.malformed {
		t.Error(bad)
	}
	pods := r.mon.pods()
	if len(pods) != r.n {
		t.Errorf("%d pods, want %d", len(pods), r.n)
	}
	for _, p := range pods {
		hash, _ := hashRecord(p.Annotations[sidecar.HashAnnotation], chaosName)
		st := sidecar.ContainerStatus(p, "sidecar1")
		switch {
		case st == nil || sidecar.FindPodContainer(p, "sidecar1").Image != r.image || st.Image != r.image || !st.Ready:
			t.Errorf("pod %s half upgraded: spec %s, status %+v", p.Name, sidecar.FindPodContainer(p, "sidecar1").Image, st)
		case hash != ss.Annotations[sidecar.HashAnnotation]:
			t.Errorf("pod %s has hash %s, the SidecarSet %s", p.Name, hash, ss.Annotations[sidecar.HashAnnotation])
		case st.RestartCount != r.restarts[p.Name]+1:
			t.Errorf("pod %s: sidecar1 restarted %d times in the rollout, want once", p.Name, st.RestartCount-r.restarts[p.Name])
		}
	}
}

// rolloutMonitor samples the pods of an app from a watch every chaosSampleTick: the largest number
// unavailable at once (not ready, or sidecar1 not yet running its spec's image and ready), how
// many run the target image and are ready, and any pod whose containers are not exactly the wanted
// ones.
type rolloutMonitor struct {
	lister   corelisters.PodNamespaceLister
	selector labels.Selector
	want     []string

	mu       sync.Mutex
	image    string
	upgraded int
	last     monitorReport
	prev     time.Time
}

// monitorReport is what a rolloutMonitor saw since its last reset.
type monitorReport struct {
	samples    int
	largestGap time.Duration
	worst      int
	worstAt    time.Time
	malformed  []string
}

// startRolloutMonitor watches the pods labelled app=<app> in the scale namespace until the test
// ends; want lists the container names every pod must have, sorted.
func startRolloutMonitor(t *testing.T, app string, want []string) *rolloutMonitor {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(scaleNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=" + app }))
	m := &rolloutMonitor{lister: factory.Core().V1().Pods().Lister().Pods(scaleNamespace),
		selector: labels.SelectorFromSet(labels.Set{"app": app}), want: want}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); factory.Shutdown() })
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(chaosSampleTick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				m.sample()
			}
		}
	}()
	return m
}

func (m *rolloutMonitor) pods() []*corev1.Pod {
	pods, _ := m.lister.List(m.selector)
	return pods
}

func (m *rolloutMonitor) sample() {
	pods := m.pods()
	now := time.Now()
	unavailable, upgraded := 0, 0
	var malformed []string
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range pods {
		st := sidecar.ContainerStatus(p, "sidecar1")
		c := sidecar.FindPodContainer(p, "sidecar1")
		if !podIsReady(p) || st == nil || c == nil || st.Image != c.Image || !st.Ready {
			unavailable++
		} else if c.Image == m.image {
			upgraded++
		}
		if names := containerNames(p); !slices.Equal(names, m.want) {
			malformed = append(malformed, fmt.Sprintf("pod %s has containers %v, want %v", p.Name, names, m.want))
		}
	}
	r := &m.last
	if !m.prev.IsZero() {
		r.largestGap = max(r.largestGap, now.Sub(m.prev))
	}
	m.prev = now
	r.samples++
	if unavailable > r.worst {
		r.worst, r.worstAt = unavailable, now
	}
	if len(malformed) > 0 && len(r.malformed) < 10 {
		r.malformed = append(r.malformed, now.Format(time.StampMilli)+": "+strings.Join(malformed, "; "))
	}
	m.upgraded = upgraded
}

// reset starts a new rollout towards image.
func (m *rolloutMonitor) reset(image string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.image, m.upgraded, m.last, m.prev = image, 0, monitorReport{}, time.Time{}
}

func (m *rolloutMonitor) progress() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.upgraded
}

func (m *rolloutMonitor) report() monitorReport {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// restartCounts returns sidecar1's restart count per pod.
func (m *rolloutMonitor) restartCounts() map[string]int32 {
	counts := map[string]int32{}
	for _, p := range m.pods() {
		if st := sidecar.ContainerStatus(p, "sidecar1"); st != nil {
			counts[p.Name] = st.RestartCount
		}
	}
	return counts
}

// containerNames returns the names of the pod's containers, sorted.
func containerNames(p *corev1.Pod) []string {
	names := make([]string, 0, len(p.Spec.Containers))
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names
}
