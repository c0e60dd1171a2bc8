package rollout

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// This file divides a cluster SidecarSet's maxUnavailable among the namespaces of its pods, so
// that what one namespace's editors control (their pods' readiness, a config or a NetworkPolicy
// the new sidecar meets there) cannot stall the rollout in every other namespace.
//
// The rule, for a cluster SidecarSet whose managed pods are in more than one namespace, with B
// the resolved maxUnavailable, N its managed pods and n(ns) those of namespace ns:
//
//	share(ns) = max(1, min(B-1, ceil(B * n(ns) / N)))     (0 when B is 0)
//
// The pods of ns that hold a place of maxUnavailable (updated and unavailable but not exempt as
// not ready before their upgrade, or written and not seen yet) hold at most share(ns) of them
// while ready pods of another namespace wait for their upgrade (candidates that partition and
// backoffs let go): a ready pod of ns whose share is used up waits (ReasonNamespaceShare) and the
// walk goes on with the other namespaces' pods, within what is left of B. Every place is still
// counted against B, so the total never exceeds it. With no other namespace waiting, B alone
// bounds ns: the last namespace of a rollout, or one that has most pods, is not slowed down for
// nobody.
//
// With B >= 2 no share is the whole budget (B-1 at most), so one namespace's pods never stall the
// others. With B = 1 every share is the one place (a share of 0 would upgrade no ready pod at
// all), so a namespace whose upgraded pods stay unavailable holds it: when one namespace's pods
// hold every place of B by themselves while pods of other namespaces wait for one
// (Result.Holder), the controller lets that hold lapse after NamespaceHoldLapse
// (Options.Lapsed). The namespace's pods then count against its share alone, whether contested
// or not, so none of its other pods is upgraded while they hold it, and the other namespaces go
// on. A NamespacedSidecarSet, or a cluster SidecarSet whose pods are all in one namespace, has
// one share: B.

// ReasonNamespaceShare: the pod's namespace already holds its share of maxUnavailable.
const ReasonNamespaceShare = "NamespaceShare"

// NamespaceHoldLapse is how long the pods of one namespace may hold every place of a cluster
// SidecarSet's maxUnavailable while pods of other namespaces wait for one, before the controller
// lets their hold lapse (Options.Lapsed).
const NamespaceHoldLapse = 10 * time.Minute

// NamespaceShare returns the places of maxUnavailable b that the pods of one namespace may hold,
// n of a SidecarSet's total managed pods being in it, over namespaces namespaces: b for one
// namespace, else max(1, min(b-1, ceil(b*n/total))); 0 when b is 0.
func NamespaceShare(b, n, total int32, namespaces int) int32 {
	switch {
	case b <= 0:
		return 0
	case namespaces <= 1 || total <= 0:
		return b
	}
	c := (int64(b)*int64(n) + int64(total) - 1) / int64(total) // ceil, without overflow
	return int32(max(1, min(int64(b)-1, c)))
}

// shares is the division of a round's maxUnavailable among namespaces; nil when it does not
// apply (a NamespacedSidecarSet, or pods in one namespace).
type shares struct {
	pods    map[string]int32    // managed pods per namespace
	held    map[string]int32    // places held per namespace, lapsed or not
	holders map[string][]string // the names of the pods holding them
	lapsed  map[string]bool     // Options.Lapsed
	max     int32               // resolved maxUnavailable
	total   int32               // managed pods
	// waiting are the namespaces with ready pods waiting for their upgrade (contend).
	waiting map[string]bool
}

func newShares(ss *v1alpha1.SidecarSet, managed []*Pod, lapsed map[string]bool) *shares {
	if v1alpha1.IsNamespaced(ss) || len(managed) == 0 {
		return nil
	}
	s := &shares{pods: map[string]int32{}, held: map[string]int32{}, holders: map[string][]string{}, lapsed: lapsed, total: int32(len(managed))}
	for _, p := range managed {
		s.pods[p.Namespace]++
	}
	if len(s.pods) < 2 {
		return nil
	}
	return s
}

// hold records a pod holding a place of its namespace's share, and reports whether it also
// counts against maxUnavailable (its namespace's hold has not lapsed).
func (s *shares) hold(p *Pod) bool {
	if s == nil {
		return true
	}
	s.held[p.Namespace]++
	s.holders[p.Namespace] = append(s.holders[p.Namespace], p.Name)
	return !s.lapsed[p.Namespace]
}

// contend records the namespaces of the pods given (ready candidates the round may take): a
// namespace's share limits its pods only while another namespace has some.
func (s *shares) contend(pods []*Pod, facts []podFacts, candidates []int, skip func(*Pod) bool) {
	if s == nil {
		return
	}
	s.waiting = map[string]bool{}
	for _, i := range candidates {
		if facts[i].readyForSidecar && !skip(pods[i]) {
			s.waiting[pods[i].Namespace] = true
		}
	}
}

// contested reports whether ready pods of a namespace other than ns wait for their upgrade.
func (s *shares) contested(ns string) bool {
	return len(s.waiting) > 1 || len(s.waiting) == 1 && !s.waiting[ns]
}

func (s *shares) share(ns string) int32 {
	return NamespaceShare(s.max, s.pods[ns], s.total, len(s.pods))
}

// used returns a counter of the places each namespace holds, starting from those held before
// the round; fresh starts from none (a preview's later batches).
func (s *shares) used(fresh bool) map[string]int32 {
	if s == nil {
		return nil
	}
	if fresh {
		return map[string]int32{}
	}
	return maps.Clone(s.held)
}

// take counts a place namespace ns takes in used.
func (s *shares) take(used map[string]int32, ns string) {
	if s != nil {
		used[ns]++
	}
}

// full reports whether namespace ns holds its whole share in used while another namespace's
// pods wait (contested), or at all once its hold lapsed; an uncontested namespace is otherwise
// bounded by maxUnavailable alone.
func (s *shares) full(used map[string]int32, ns string) bool {
	return s != nil && (s.contested(ns) || s.lapsed[ns]) && used[ns] >= s.share(ns)
}

// holder returns the namespace whose counted places (its hold has not lapsed) fill
// maxUnavailable by themselves, "" for none.
func (s *shares) holder() string {
	if s == nil || s.max <= 0 {
		return ""
	}
	for _, ns := range slices.Sorted(maps.Keys(s.held)) {
		if !s.lapsed[ns] && s.held[ns] >= s.max {
			return ns
		}
	}
	return ""
}

// message says why a pod of ns waits for its namespace's share.
func (s *shares) message(ns string) string {
	names := slices.Sorted(slices.Values(s.holders[ns]))
	const shown = 3
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	m := fmt.Sprintf("namespace %s has %d of the %d pods, so its share of maxUnavailable %d is %d: %d of its pods hold it (%s)",
		ns, s.pods[ns], s.total, s.max, s.share(ns), s.held[ns], list)
	if s.lapsed[ns] {
		m += fmt.Sprintf("; they held every place of maxUnavailable for %s while other namespaces waited, so they count against this share alone", NamespaceHoldLapse)
	}
	return m
}
