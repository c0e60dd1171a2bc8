package apiserver

import (
	"context"
	"os"
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
		Name: leaseName, Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second,
		RetryPeriod: 2 * time.Second, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: fn,
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
