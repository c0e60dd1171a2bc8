package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/klog/v2"
)

// Storage health checks that k8s.io/apiserver's etcd options install on /livez and /readyz.
var storageChecks = map[string]bool{"etcd": true, "etcd-readiness": true}

// DecoupleFromStorage takes the etcd checks out of /livez and /readyz (they stay on /healthz,
// e.g. /healthz/etcd) and returns the etcd check, nil when there is none. Injection answers from
// the in-memory caches: an etcd outage must neither take the server out of its Service (every pod
// create that reaches the webhook would fail) nor restart it.
func DecoupleFromStorage(c *genericapiserver.Config) healthz.HealthChecker {
	var etcd healthz.HealthChecker
	keep := func(checks []healthz.HealthChecker) []healthz.HealthChecker {
		out := checks[:0:0]
		for _, ch := range checks {
			if storageChecks[ch.Name()] {
				if ch.Name() == "etcd" {
					etcd = ch
				}
				continue
			}
			out = append(out, ch)
		}
		return out
	}
	c.LivezChecks = keep(c.LivezChecks)
	c.ReadyzChecks = keep(c.ReadyzChecks)
	return etcd
}

// StorageGate answers requests for stored resources at once with 503 ServiceUnavailable and a
// clear message while the storage is known to be down, rather than letting each wait for the
// request timeout. Discovery and the injection endpoint are never gated.
type StorageGate struct {
	check    healthz.HealthChecker
	interval time.Duration
	down     atomic.Pointer[error]
}

// NewStorageGate polls check every interval once Run starts.
func NewStorageGate(check healthz.HealthChecker, interval time.Duration) *StorageGate {
	return &StorageGate{check: check, interval: interval}
}

// Run polls the storage until ctx ends.
func (g *StorageGate) Run(ctx context.Context) {
	wait.UntilWithContext(ctx, func(context.Context) { g.observe(g.check.Check(nil)) }, g.interval)
}

// observe records the outcome of a check, logging transitions.
func (g *StorageGate) observe(err error) {
	prev := g.down.Load()
	switch {
	case err != nil && prev == nil:
		klog.ErrorS(err, "the SidecarSet storage is unavailable; serving injection from the cache")
	case err == nil && prev != nil:
		klog.InfoS("the SidecarSet storage is available again")
	}
	if err == nil {
		g.down.Store(nil)
		return
	}
	g.down.Store(&err)
}

// Wrap gates the requests of h that read or write stored resources.
func (g *StorageGate) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down := g.down.Load(); down != nil && gated(r.URL.Path) {
			msg := fmt.Sprintf("the SidecarSet storage (etcd) is unavailable, retry later (pods are still injected from the server's cache): %v", *down)
			err := apierrors.NewServiceUnavailable(msg)
			// No retryAfterSeconds (it becomes a Retry-After header): client-go would retry
			// silently, ten times, and users would wait half a minute for this message.
			responsewriters.ErrorNegotiated(err, Codecs, schema.GroupVersion{}, w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// gated reports whether a request path reaches stored resources: under /apis/apps.kruise.io/
// below the version (discovery of the group and the version stays served).
func gated(path string) bool {
	rest, ok := strings.CutPrefix(path, "/apis/apps.kruise.io/")
	if !ok {
		return false
	}
	_, below, _ := strings.Cut(strings.Trim(rest, "/"), "/")
	return below != ""
}
