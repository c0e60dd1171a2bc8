package apiserver

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaseName is the controller Lease in the server's namespace.
const leaseName = "sidecarset-controller"

// runElected runs fn while this replica holds the controller Lease in namespace, for as many
// terms as it wins until ctx ends. A replica that loses the Lease (its renewals failed for
// RenewDeadline) stops its term (fn's context ends, cancelling its requests), keeps serving the
// API and runs for the Lease again.
func runElected(ctx context.Context, namespace string, main *rest.Config, fn func(context.Context)) {
	host, err := os.Hostname()
	if err != nil {
		klog.ErrorS(err, "hostname for the leader election identity")
	}
	id := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaseName,
		nil, kubernetes.NewForConfigOrDie(main).CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil { // only for an unknown lock type
		klog.ErrorS(err, "creating the controller lock")
		klog.FlushAndExit(klog.ExitFlushTimeout, 1)
	}
	config := leaderelection.LeaderElectionConfig{
		Name: leaseName, Lock: &releaseGuard{Interface: lock}, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 2 * time.Second, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: oneTermAtATime(fn),
			OnStoppedLeading: func() { klog.InfoS("stopped leading", "lease", leaseName) },
		},
	}
	for {
		klog.InfoS("running for the controller lease", "lease", klog.KRef(namespace, leaseName), "identity", id)
		leaderelection.RunOrDie(ctx, config)
		if ctx.Err() != nil {
			return
		}
		klog.InfoS("lost the controller lease; running for it again", "lease", leaseName, "identity", id)
	}
}

// oneTermAtATime returns fn run for one term at a time: client-go starts a term's callback in a
// goroutine and does not wait for it when the term ends, so a replica that wins the Lease again
// at once would otherwise run a new term while the last one's controllers are still stopping.
// A term that starts after its context ended (lost already) runs nothing.
func oneTermAtATime(fn func(context.Context)) func(context.Context) {
	var term sync.Mutex
	return func(ctx context.Context) {
		term.Lock()
		defer term.Unlock()
		if ctx.Err() == nil {
			fn(ctx)
		}
	}
}

// releaseGuard is a lock that never releases a Lease another replica holds. With ReleaseOnCancel,
// client-go releases the Lease whenever a term ends, also after renewals failed for RenewDeadline
// (a replica stalled past it, whose Lease another replica took meanwhile): it reads the Lease
// again, which refreshes the version the update is written against, then decides it leads from
// the record it observed before, so it would clear the new leader's record and let a replica win
// a term while the new leader's runs on. A release (an update without holder) goes through only
// when the last read Lease names this replica.
type releaseGuard struct {
	resourcelock.Interface
	holder string // of the Lease as last read or written
}

func (g *releaseGuard) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := g.Interface.Get(ctx)
	if err == nil {
		g.holder = r.HolderIdentity
	}
	return r, raw, err
}

func (g *releaseGuard) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := g.Interface.Create(ctx, r)
	if err == nil {
		g.holder = r.HolderIdentity
	}
	return err
}

func (g *releaseGuard) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity == "" && g.holder != g.Identity() {
		return fmt.Errorf("not releasing the controller lease: %q holds it", g.holder)
	}
	err := g.Interface.Update(ctx, r)
	if err == nil {
		g.holder = r.HolderIdentity
	}
	return err
}
