package sidecarset

import (
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/podcache"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// expectationTTL is how long a round waits at most for the pod cache to show a write, as
// Kubernetes' controllers wait for their expectations: a write whose outcome was unknown and that
// the server never applied leaves the pod as it was, and must not stall the rollout for ever.
const expectationTTL = 5 * time.Minute

// expectations remembers, for each pod the controller wrote (namespace/name), the resourceVersion
// the pod cache must show before a round plans on the pod again: planning on a cache that does
// not show the controller's own writes could take more pods down than maxUnavailable allows.
//
//   - a write that succeeded expects the version it returned;
//   - a write that failed for sure (the server refused it) expects nothing;
//   - a write whose outcome is unknown (ambiguous: it timed out, the server failed while handling
//     it, or the answer was lost) may have been applied: it expects any version newer than the one
//     the write was based on.
//
// An expectation is met once the cache shows that version or a newer one, or the pod is gone; it
// is dropped after expectationTTL. Until then the pod alone is held back (unseen): it counts
// against maxUnavailable and nothing else is written to it.
type expectations struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	pending map[string]expectation
}

// expectation is a resourceVersion a pod's cache entry must reach, until a deadline.
type expectation struct {
	version  uint64
	deadline time.Time
}

func newExpectations(clk clock.PassiveClock) *expectations {
	return &expectations{clock: clk, pending: map[string]expectation{}}
}

// written records that pod key (namespace/name) was written at resourceVersion rv.
func (e *expectations) written(key, rv string) { e.set(key, rv, 0) }

// maybeWritten records that a write of pod key based on resourceVersion rv may have been applied.
func (e *expectations) maybeWritten(key, rv string) { e.set(key, rv, 1) }

func (e *expectations) set(key, rv string, newer uint64) {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[key] = expectation{version: v + newer, deadline: e.clock.Now().Add(expectationTTL)}
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, key)
}

// unseen returns the keys (namespace/name) of the given pods whose writes the cache does not show
// yet; it forgets the expectations that are met or expired. A round plans on the other pods and
// holds these back (rollout.Options.Unseen): a write the cache has not shown must neither freeze
// the SidecarSet's round nor be planned over.
func (e *expectations) unseen(src *podcache.Source, pods []*rollout.Pod) map[string]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) == 0 {
		return nil
	}
	now := e.clock.Now()
	var out map[string]bool
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		want, found := e.pending[key]
		if !found {
			continue
		}
		got, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if err != nil || got >= want.version || src.Get(p.Namespace, p.Name) == nil || now.After(want.deadline) {
			delete(e.pending, key)
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[key] = true
	}
	return out
}

// ambiguous reports whether a failed write may still have been applied: it timed out, the server
// failed while handling it, or no API status came back (a broken connection, a cancelled context)
// after the request may have been sent. A request that never connected (kube-apiserver
// restarting: connection refused) was not applied: waiting for the cache to show it stalled the
// rollout of its pods for expectationTTL.
func ambiguous(err error) bool {
	if apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsInternalError(err) ||
		apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var status apierrors.APIStatus
	return !errors.As(err, &status) && !notConnected(err)
}

// notConnected reports whether err is a failure to connect: the request was never sent.
func notConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
