package backoff

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// The backoffs of the actions kube-apiserver refuses: an upgrade or an eviction (a webhook, a
// policy, RBAC, a PodDisruptionBudget) is tried again after 5 s, doubling up to 5 minutes; a
// resize (the node cannot fit it, the namespace's ResourceQuota or LimitRange) after 30 s,
// doubling up to 10 minutes. A new revision of the SidecarSet tries again at once.
const (
	Initial       = 5 * time.Second
	Max           = 5 * time.Minute
	ResizeInitial = 30 * time.Second
	ResizeMax     = 10 * time.Minute
)

// backoffDelays are the initial and longest delay of each action.
var backoffDelays = map[string][2]time.Duration{
	rollout.BackoffUpgrade: {Initial, Max},
	rollout.BackoffEvict:   {Initial, Max},
	rollout.BackoffResize:  {ResizeInitial, ResizeMax},
}

// Pods are the pods whose last upgrade, resize or eviction kube-apiserver refused, per
// SidecarSet: what this term saw, and what the SidecarSet's status recorded (status.backoffs,
// merged by Sync), so that a new leader waits as the last one would have. An entry is kept for
// twice its longest delay after its retry, so that a refusal again doubles the delay. A nil
// Pods keeps nothing.
type Pods struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	bySet map[string]map[backoffID]v1alpha1.PodBackoff
}

type backoffID struct {
	uid    types.UID
	action string
}

// New returns the backoffs of a term, on clk.
func New(clk clock.PassiveClock) *Pods {
	return &Pods{clock: clk, bySet: map[string]map[backoffID]v1alpha1.PodBackoff{}}
}

// Sync drops the entries of ss kept for another revision or long past, and takes in those its
// status records that this term lacks or knows to retry sooner.
func (b *Pods) Sync(ss *v1alpha1.SidecarSet) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now, revision := b.clock.Now(), ss.Status.LatestRevision
	m := b.bySet[ss.Name]
	for id, e := range m {
		if e.Revision != revision || now.Sub(e.RetryAfter.Time) > 2*backoffDelays[e.Action][1] {
			delete(m, id)
		}
	}
	for _, e := range ss.Status.Backoffs {
		if e.Revision != revision {
			continue
		}
		if m == nil {
			m = map[backoffID]v1alpha1.PodBackoff{}
		}
		id := backoffID{e.UID, e.Action}
		if was, ok := m[id]; !ok || was.RetryAfter.Before(&e.RetryAfter) {
			m[id] = e
		}
	}
	if len(m) == 0 {
		delete(b.bySet, ss.Name)
	} else {
		b.bySet[ss.Name] = m
	}
}

// Refuse records that kube-apiserver refused action on pod p for ss's latest revision, and
// returns how long p is left alone.
func (b *Pods) Refuse(ss *v1alpha1.SidecarSet, p *rollout.Pod, action, message string) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.bySet[ss.Name]
	if m == nil {
		m = map[backoffID]v1alpha1.PodBackoff{}
		b.bySet[ss.Name] = m
	}
	id, now, delays := backoffID{p.UID, action}, b.clock.Now(), backoffDelays[action]
	next := rollout.NextBackoff(m[id], p, action, ss.Status.LatestRevision, message, now, delays[0], delays[1])
	m[id] = next
	return next.RetryAfter.Sub(now).Round(time.Second)
}

// Reset forgets the backoff of action on the pod uid: kube-apiserver took it.
func (b *Pods) Reset(ss *v1alpha1.SidecarSet, uid types.UID, action string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.bySet[ss.Name], backoffID{uid, action})
}

// Active returns the backoffs of ss that hold now.
func (b *Pods) Active(ss *v1alpha1.SidecarSet) []v1alpha1.PodBackoff {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return rollout.ActiveBackoffs(slices.Collect(maps.Values(b.bySet[ss.Name])), ss.Status.LatestRevision, b.clock.Now())
}

// Deferred reports whether action on the pod uid is in its backoff.
func (b *Pods) Deferred(ss *v1alpha1.SidecarSet, uid types.UID, action string) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.bySet[ss.Name][backoffID{uid, action}]
	return ok && e.Revision == ss.Status.LatestRevision && b.clock.Now().Before(e.RetryAfter.Time)
}

// Forget drops a deleted SidecarSet's backoffs.
func (b *Pods) Forget(name string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.bySet, name)
}
