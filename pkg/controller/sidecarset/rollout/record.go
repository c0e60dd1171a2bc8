package rollout

import (
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// This file turns what rounds must remember between them into the SidecarSet's status and back:
// the evictions whose pods their owners have not replaced yet (they hold places of
// maxUnavailable) and the namespaces holding every place of a cluster SidecarSet's budget (since
// when, lapsed or not). Kept in the status, as a Job keeps its uncounted pods, they outlive the
// leader that saw them: a new leader, and the rollout view any replica serves, plan with the
// same. Times are kept at the second, as the status stores them, so that a record read back
// compares equal to the one written.

// EvictionsFromStatus returns the evictions a status records.
func EvictionsFromStatus(recorded []v1alpha1.InFlightEviction) []Eviction {
	out := make([]Eviction, 0, len(recorded))
	for _, r := range recorded {
		out = append(out, Eviction{Namespace: r.Namespace, Name: r.Name, Owner: r.OwnerUID, Want: int(r.OwnerPods), At: r.Time.Time})
	}
	return out
}

// EvictionsStatus returns evictions as a status records them: one per pod (its latest), ordered by
// time, then namespace and name.
func EvictionsStatus(evictions []Eviction) []v1alpha1.InFlightEviction {
	if len(evictions) == 0 {
		return nil
	}
	out := make([]v1alpha1.InFlightEviction, 0, len(evictions))
	for _, e := range MergeEvictions(evictions) {
		out = append(out, v1alpha1.InFlightEviction{Namespace: e.Namespace, Name: e.Name, OwnerUID: e.Owner,
			OwnerPods: int32(e.Want), Time: metav1.NewTime(e.At).Rfc3339Copy()})
	}
	return out
}

// MergeEvictions returns the evictions of lists, one per pod (the latest; a status's second-grained
// copy of an eviction also remembered whole is the same eviction), ordered by time, then namespace
// and name.
func MergeEvictions(lists ...[]Eviction) []Eviction {
	latest := map[[2]string]Eviction{}
	for _, list := range lists {
		for _, e := range list {
			key := [2]string{e.Namespace, e.Name}
			if was, ok := latest[key]; !ok || e.At.Truncate(time.Second).After(was.At) {
				latest[key] = e
			}
		}
	}
	out := slices.Collect(maps.Values(latest))
	slices.SortFunc(out, func(a, b Eviction) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// LapsedHolds returns the namespaces whose hold on maxUnavailable has lapsed at now, as
// Options.Lapsed: those recorded as lapsed, and the holder once it has held for
// NamespaceHoldLapse. nil when none.
func LapsedHolds(holds []v1alpha1.NamespaceHold, now time.Time) map[string]bool {
	var out map[string]bool
	for _, h := range holds {
		if h.Lapsed || now.Sub(h.Since.Time) >= NamespaceHoldLapse {
			if out == nil {
				out = map[string]bool{}
			}
			out[h.Namespace] = true
		}
	}
	return out
}

// NextHolds returns the holds to record after a round planned with lapsed (LapsedHolds of prev):
// the lapsed namespaces whose pods still hold places stay, marked lapsed; the plan's holder is
// timed from prev when it held already, from now otherwise. It also returns the namespaces that
// lapsed with this round (not marked lapsed in prev), sorted.
func NextHolds(prev []v1alpha1.NamespaceHold, lapsed map[string]bool, plan *Result, now time.Time) ([]v1alpha1.NamespaceHold, []string) {
	since := map[string]metav1.Time{}
	wasLapsed := map[string]bool{}
	for _, h := range prev {
		since[h.Namespace] = h.Since
		wasLapsed[h.Namespace] = h.Lapsed
	}
	var next []v1alpha1.NamespaceHold
	var newly []string
	for _, ns := range slices.Sorted(maps.Keys(lapsed)) {
		if plan.Holding[ns] == 0 {
			continue
		}
		s, ok := since[ns]
		if !ok {
			s = metav1.NewTime(now).Rfc3339Copy()
		}
		next = append(next, v1alpha1.NamespaceHold{Namespace: ns, Since: s, Lapsed: true})
		if !wasLapsed[ns] {
			newly = append(newly, ns)
		}
	}
	if h := plan.Holder; h != "" && !lapsed[h] {
		s, ok := since[h]
		if !ok || wasLapsed[h] {
			s = metav1.NewTime(now).Rfc3339Copy()
		}
		next = append(next, v1alpha1.NamespaceHold{Namespace: h, Since: s})
	}
	return next, newly
}

// The actions of a pod that kube-apiserver may refuse, each with its own backoff
// (v1alpha1.PodBackoff.Action).
const (
	BackoffUpgrade = "Upgrade"
	BackoffResize  = "Resize"
	BackoffEvict   = "Evict"
)

// MaxRecordedBackoffs is the most backoffs a status records: those retried last.
const MaxRecordedBackoffs = 100

// NextBackoff returns the backoff of pod after kube-apiserver refused action for revision at now:
// one more attempt than prev (none when prev is for another revision), retried after initial
// doubling with each attempt up to most, at the next whole second (as the status stores it).
func NextBackoff(prev v1alpha1.PodBackoff, pod *Pod, action, revision, message string, now time.Time, initial, most time.Duration) v1alpha1.PodBackoff {
	attempts := int32(1)
	if prev.Revision == revision && prev.Action == action {
		attempts = prev.Attempts + 1
	}
	delay := min(initial<<min(attempts-1, 20), most)
	retry := now.Add(delay).Truncate(time.Second).Add(time.Second)
	return v1alpha1.PodBackoff{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Action: action, Revision: revision,
		Attempts: attempts, RetryAfter: metav1.NewTime(retry), Message: message}
}

// ActiveBackoffs returns the backoffs of recorded for revision that still hold at now.
func ActiveBackoffs(recorded []v1alpha1.PodBackoff, revision string, now time.Time) []v1alpha1.PodBackoff {
	var out []v1alpha1.PodBackoff
	for _, b := range recorded {
		if b.Revision == revision && now.Before(b.RetryAfter.Time) {
			out = append(out, b)
		}
	}
	return out
}

// BackoffOptions returns what active backoffs tell the planner: the pods whose upgrade waits
// (Options.Deferred: a refused upgrade, or a refused eviction where evictions recreate pods) and
// those whose resize kube-apiserver refused, with its answer (Options.ResizeRefused).
func BackoffOptions(active []v1alpha1.PodBackoff, recreates bool) (deferred map[types.UID]bool, resizeRefused map[types.UID]string) {
	for _, b := range active {
		switch {
		case b.Action == BackoffUpgrade, b.Action == BackoffEvict && recreates:
			if deferred == nil {
				deferred = map[types.UID]bool{}
			}
			deferred[b.UID] = true
		case b.Action == BackoffResize:
			if resizeRefused == nil {
				resizeRefused = map[types.UID]string{}
			}
			resizeRefused[b.UID] = b.Message
		}
	}
	return deferred, resizeRefused
}

// BackoffsStatus returns backoffs as a status records them: at most MaxRecordedBackoffs, those
// retried last, ordered by namespace, name and action.
func BackoffsStatus(backoffs []v1alpha1.PodBackoff) []v1alpha1.PodBackoff {
	if len(backoffs) == 0 {
		return nil
	}
	out := slices.Clone(backoffs)
	if len(out) > MaxRecordedBackoffs {
		slices.SortFunc(out, func(a, b v1alpha1.PodBackoff) int { return b.RetryAfter.Compare(a.RetryAfter.Time) })
		out = out[:MaxRecordedBackoffs]
	}
	slices.SortFunc(out, func(a, b v1alpha1.PodBackoff) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Action, b.Action)
	})
	return out
}
