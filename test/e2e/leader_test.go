package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// The controller Lease of pkg/apiserver/leader.go (runElected) in hack/local-up.sh's --namespace.
const (
	leaseNamespace = serverNamespace
	leaseName      = "sidecarset-controller"
	leaseDuration  = 15 * time.Second
	retryPeriod    = 2 * time.Second
)

// What client-go's leader election and the controller log (klog text format) on each replica.
var (
	logAttempting = `"Attempting to acquire leader lease..." lock="` + leaseNamespace + "/" + leaseName + `"`
	logAcquired   = `"Successfully acquired lease" lock="` + leaseNamespace + "/" + leaseName + `"`
	logStarted    = `"starting sidecarset controller"`
)

// TestLeaderElection runs two server replicas against the same etcd and cluster: exactly one holds
// the controller Lease and rolls SidecarSets out while both serve the API; killed with SIGKILL (no
// release), the leader's Lease expires, the other replica takes it over and finishes the next
// in-place upgrade, which nobody starts before the takeover. The cluster is left as found: replica 1
// running, registered and leading, replica 2 stopped.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	leader, holder := startSecondReplica(t)
	follower := 3 - leader
	if !strings.HasPrefix(holder, host+"_") {
		t.Errorf("holderIdentity %q is not <hostname>_<uuid> of this host %q", holder, host)
	}
	t.Logf("replica %d holds the Lease as %s; replica %d follows", leader, holder, follower)

	// The leader rolls a SidecarSet out; the follower serves the same objects but does not act.
	pods := setupUpgrade(t, simpleSidecarSet("leader", "busybox:1.36", nil), "leader", 3)
	upgradedBefore := map[int]int{leader: upgradedPods(t, leader, "leader"), follower: upgradedPods(t, follower, "leader")}
	patchImage(t, "leader", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	waitSidecarImage(t, "leader", "busybox:1.37")
	waitStatus(t, "leader", v1alpha1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3})
	for _, n := range []int{leader, follower} {
		checkServes(t, n, "leader", 3)
	}
	if got := upgradedPods(t, leader, "leader") - upgradedBefore[leader]; got != 3 {
		t.Errorf("the leader (replica %d) upgraded %d pods, want 3", leader, got)
	}
	if got := upgradedPods(t, follower, "leader") - upgradedBefore[follower]; got != 0 {
		t.Errorf("the follower (replica %d) upgraded %d pods", follower, got)
	}
	if strings.Contains(serverLog(t, follower), logStarted) {
		t.Errorf("the follower (replica %d) started its controller", follower)
	}

	// Kill the leader without letting it release the Lease, then change the image through the
	// survivor (kube-apiserver routes to replica 1 only).
	pid := serverPID(t, leader)
	killed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill replica %d (pid %d): %v", leader, pid, err)
	}
	survivor := follower
	direct := clientset.NewForConfigOrDie(serverConfig(survivor))
	upgradedBefore[survivor] = upgradedPods(t, survivor, "leader")
	lease, err := kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	transitions := ptr.Deref(lease.Spec.LeaseTransitions, 0)
	patchImageOn(t, direct, "leader", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.38"}]}}`)

	// Until the survivor holds the Lease nobody touches the pods; it may only take the Lease once
	// the killed leader's last renewal has expired.
	var newHolder string
	var takeover time.Duration
	if last, ok := poll(3*leaseDuration, func(ctx context.Context) (bool, string) {
		started := countImage(listPods(t, "leader"), "busybox:1.38") // pods first, then the Lease
		lease, err := kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("lease: %v", err)
		}
		if h := ptr.Deref(lease.Spec.HolderIdentity, ""); h != holder {
			newHolder, takeover = h, time.Since(killed)
			return true, ""
		}
		if started > 0 {
			t.Errorf("%d pods were upgraded while the killed leader still held the Lease", started)
		}
		return false, fmt.Sprintf("holder %s, renewed %v", holder, lease.Spec.RenewTime)
	}); !ok {
		t.Fatalf("the Lease is still held by the killed replica %d (%s) %s after the kill; last seen: %s", leader, holder, time.Since(killed).Round(time.Second), last)
	}
	t.Logf("replica %d took the Lease over as %s %s after replica %d was killed", survivor, newHolder,
		takeover.Round(100*time.Millisecond), leader)
	if !strings.HasPrefix(newHolder, host+"_") {
		t.Errorf("new holderIdentity %q is not <hostname>_<uuid> of this host", newHolder)
	}
	// The leader renews every RetryPeriod; the survivor looks every RetryPeriod to 2.2 RetryPeriods
	// (jitter) and takes the Lease a full LeaseDuration after it saw the last renewal: at least
	// LeaseDuration - RetryPeriod after the kill, at most LeaseDuration + 2 x 2.2 RetryPeriods.
	if low, high := leaseDuration-2*retryPeriod, leaseDuration+15*time.Second; takeover < low || takeover > high {
		t.Errorf("takeover after %s, want between %s and %s", takeover, low, high)
	}
	waitLog(t, survivor, logAcquired, 10*time.Second)
	waitLog(t, survivor, logStarted, 10*time.Second)
	lease, err = kube.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(lease.Spec.LeaseTransitions, 0); got != transitions+1 {
		t.Errorf("leaseTransitions %d, want %d", got, transitions+1)
	}

	// The new leader completes the in-place upgrade.
	after := waitSidecarImage(t, "leader", "busybox:1.38")
	waitStatusOn(t, direct, "leader", v1alpha1.SidecarSetStatus{MatchedPods: 3, UpdatedPods: 3, ReadyPods: 3, UpdatedReadyPods: 3}, rolloutTimeout)
	for i, p := range after {
		if p.UID != pods[i].UID {
			t.Errorf("pod %s was recreated", p.Name)
		}
		if c := sidecar.ContainerStatus(p, "sidecar1"); c.RestartCount != sidecar.ContainerStatus(pods[i], "sidecar1").RestartCount+2 {
			t.Errorf("pod %s: sidecar1 restartCount %d, want two in-place restarts since %d", p.Name, c.RestartCount,
				sidecar.ContainerStatus(pods[i], "sidecar1").RestartCount)
		}
	}
	if got := upgradedPods(t, survivor, "leader") - upgradedBefore[survivor]; got != 3 {
		t.Errorf("the new leader (replica %d) upgraded %d pods, want 3", survivor, got)
	}

	if leader != 1 {
		return // restoreReplicas stops replica 2
	}
	// Replica 1 comes back, registered, as a follower: the survivor keeps the Lease.
	if _, err := localUp("restart-server"); err != nil {
		t.Fatal(err)
	}
	waitLog(t, 1, logAttempting, 30*time.Second)
	// What is tested: for two retry periods the restarted replica tries and does not take the
	// Lease, throughout.
	consistently(t, "replica 1 a follower", pollInterval, 2*retryPeriod+time.Second, func(context.Context) (bool, string) {
		return !leadsByLog(t, 1), "its log says it leads"
	})
	if got, _ := waitLeader(t, []int{1, 2}, leaseDuration); got != survivor {
		t.Errorf("the restarted replica 1 took the Lease from replica %d", survivor)
	}
	checkServes(t, 1, "leader", 3)
	if ss, err := sidecars.AppsV1alpha1().SidecarSets().Get(ctx, "leader", metav1.GetOptions{}); err != nil || ss.Status.UpdatedPods != 3 {
		t.Errorf("through kube-apiserver after the restart: %v", err)
	}
}

// TestLeaderStalledPastRenewal pauses the leading replica (SIGSTOP) past its renew deadline: the
// other replica takes the Lease over and rolls out the next change; the stalled one, once it runs
// again, finds it lost the Lease, stops its controller, keeps serving and runs for the Lease again
// without acting on later changes.
func TestLeaderStalledPastRenewal(t *testing.T) {
	leader, holder := startSecondReplica(t)
	other := 3 - leader
	setupUpgrade(t, simpleSidecarSet("stalled", "busybox:1.36", nil), "stalled", 2)

	pid := serverPID(t, leader)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(resume)
	if n, h := waitLeader(t, []int{other}, 3*leaseDuration); n != other || h == holder {
		t.Fatalf("replica %d did not take the Lease from the stalled replica %d (holder %s)", other, leader, h)
	}
	direct := clientset.NewForConfigOrDie(serverConfig(other))
	patchImageOn(t, direct, "stalled", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	waitSidecarImage(t, "stalled", "busybox:1.37")
	waitStatusOn(t, direct, "stalled", v1alpha1.SidecarSetStatus{MatchedPods: 2, UpdatedPods: 2, ReadyPods: 2, UpdatedReadyPods: 2}, rolloutTimeout)

	resume()
	waitLog(t, leader, `"lost the controller lease; running for it again"`, leaseDuration+10*time.Second)
	if !replicaRunning(leader) {
		t.Fatalf("replica %d exited after it lost the Lease", leader)
	}
	before := map[int]int{leader: upgradedPods(t, leader, "stalled"), other: upgradedPods(t, other, "stalled")}
	patchImageOn(t, direct, "stalled", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.38"}]}}`)
	waitSidecarImage(t, "stalled", "busybox:1.38")
	if got := upgradedPods(t, leader, "stalled") - before[leader]; got != 0 {
		t.Errorf("replica %d upgraded %d pods after it lost the Lease", leader, got)
	}
	if got := upgradedPods(t, other, "stalled") - before[other]; got != 2 {
		t.Errorf("the leader (replica %d) upgraded %d pods, want 2", other, got)
	}
	if n, _ := waitLeader(t, []int{leader, other}, leaseDuration); n != other {
		t.Errorf("replica %d leads, want %d", n, other)
	}
	checkServes(t, leader, "stalled", 2)
}

// startSecondReplica starts replica 2 (restoreReplicas stops it when the test ends), waits until
// it runs for the Lease and returns the replica that leads and its holder identity.
func startSecondReplica(t *testing.T) (int, string) {
	t.Helper()
	if _, err := localUp("start-replica"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restoreReplicas(t) })
	waitLog(t, 2, logAttempting, 30*time.Second)
	return waitLeader(t, []int{1, 2}, 2*leaseDuration)
}

// restoreReplicas leaves the local cluster as TestLeaderElection found it: replica 2 stopped (it
// releases the Lease on its way out), replica 1 running, registered and holding the Lease.
func restoreReplicas(t *testing.T) {
	t.Helper()
	if _, err := localUp("stop-replica"); err != nil {
		t.Error(err)
	}
	if !replicaRunning(1) {
		if _, err := localUp("restart-server"); err != nil {
			t.Error(err)
			return
		}
	}
	if n, _ := waitLeader(t, []int{1}, 2*leaseDuration); n != 1 {
		t.Errorf("replica 1 does not lead after replica 2 stopped")
	}
}

// leadsByLog tells whether replica n's current process (its log starts over with each start)
// acquired the controller Lease and has not lost it since.
func leadsByLog(t *testing.T, replica int) bool {
	log := serverLog(t, replica)
	acquired := strings.LastIndex(log, logAcquired)
	lost := max(strings.LastIndex(log, `"Failed to renew lease"`), strings.LastIndex(log, `"stopped leading"`))
	return acquired >= 0 && acquired > lost
}

func serverLog(t *testing.T, replica int) string {
	t.Helper()
	log, err := readServerLog(replica)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// readServerLog returns the log of server replica n's current process.
func readServerLog(replica int) (string, error) {
	data, err := os.ReadFile(filepath.Join(localState(), "logs", serverProcess(replica)+".log"))
	// The log holds every start of the process (hack/local-up.sh marks each): the current one's.
	log := string(data)
	if i := strings.LastIndex(log, "---- "); i >= 0 {
		log = log[i:]
	}
	return log, err
}

func serverPID(t *testing.T, replica int) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(localState(), "run", serverProcess(replica)+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// replicaRunning tells whether replica n's process (after its pid file) exists and is not a zombie.
func replicaRunning(replica int) bool {
	pid, err := os.ReadFile(filepath.Join(localState(), "run", serverProcess(replica)+".pid"))
	if err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may contain spaces and parentheses, the state follows the last ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) > 0 && fields[0] != "Z"
}

// checkServes asserts that replica n serves the SidecarSet and its rollout view directly, with
// every one of its pods matched and updated.
func checkServes(t *testing.T, replica int, name string, pods int) {
	t.Helper()
	client := clientset.NewForConfigOrDie(serverConfig(replica))
	// A replica's view comes from its own pod informer, which may lag a moment behind.
	summary, ok := poll(30*time.Second, func(ctx context.Context) (bool, string) {
		ss, err := client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("get: %v", err)
		}
		view, err := client.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("get rollout: %v", err)
		}
		updated := 0
		for _, p := range view.Status.Pods {
			if p.State == v1alpha1.PodRolloutUpdated {
				updated++
			}
		}
		return ss.Status.UpdatedPods == int32(pods) && len(view.Status.Pods) == pods && updated == pods &&
				view.Status.LatestRevision == ss.Status.LatestRevision,
			fmt.Sprintf("status %+v, rollout view: %d pods, %d updated, revision %s", ss.Status, len(view.Status.Pods), updated, view.Status.LatestRevision)
	})
	if !ok {
		t.Errorf("waited 30s for replica %d to serve %s with its %d pods updated; last seen: %s", replica, name, pods, summary)
	}
	checkInjectionView(t, client, name)
}

// checkInjectionView asserts that a replica's /rollout view names the path the leader chose: for
// the policy path, a policy in the main cluster that lists the SidecarSet. Right after a takeover
// the new leader may not have planned yet (the view then says NotPlanned): it waits for it.
func checkInjectionView(t *testing.T, client clientset.Interface, name string) {
	t.Helper()
	eventually(t, "the rollout view of "+name+" to name the path the leader chose", time.Minute, func(ctx context.Context) (bool, string) {
		view, err := client.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		inj := view.Status.Injection
		switch {
		case inj == nil || inj.Path == "" || inj.Reason == "NotPlanned":
			return false, fmt.Sprintf("%+v", inj)
		case inj.Path != string(apps.PathPolicy):
			return true, ""
		}
		p, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().Get(ctx, inj.Policy, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("policy %q: %v", inj.Policy, err)
		}
		recs := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(p.Annotations[apps.SidecarSetsAnnotation]), &recs); err != nil || recs[name] == nil {
			return false, fmt.Sprintf("policy %s does not inject it (%s)", inj.Policy, p.Annotations[apps.SidecarSetsAnnotation])
		}
		return true, ""
	})
}

// upgradedPods reads replica n's sidecarset_pods_upgraded_total for the SidecarSet (0 if absent).
func upgradedPods(t *testing.T, replica int, name string) int {
	t.Helper()
	prefix := `sidecarset_pods_upgraded_total{sidecarset="` + name + `"} `
	for _, line := range strings.Split(replicaMetrics(t, replica), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return int(n)
		}
	}
	return 0
}
