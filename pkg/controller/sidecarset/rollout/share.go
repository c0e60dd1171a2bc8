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
// The namespaces that compete for places in a round are those with ready pods waiting for their
// upgrade (candidates that partition and backoffs let go). While there are two or more, with B
// the resolved maxUnavailable, N the managed pods of the competing namespaces and n(ns) those of
// namespace ns, its share is
//
//	share(ns) = max(1, min(B-1, ceil(B * n(ns) / N)))     (0 when B is 0)
//
// and its pods that hold a place of maxUnavailable (updated and unavailable but not exempt as not
// ready before their upgrade, or written and not seen yet) hold at most share(ns) of them: a
// ready pod of ns whose share is used up waits (ReasonNamespaceShare) and the walk goes on with
// the other namespaces' pods, within what is left of B. Every place is still counted against B,
// so the total never exceeds it. A namespace competing alone is bounded by B alone, and
// namespaces with nothing left to upgrade leave their part to the others: the last namespaces of
// a rollout, or one that has most pods, are not slowed down for nobody.
//
// With B >= 2 no share is the whole budget (B-1 at most), so one namespace's pods never stall the
// others. With B = 1 every share is the one place (a share of 0 would upgrade no ready pod at
// all), so a namespace whose upgraded pods stay unavailable holds it: when one namespace's pods
// hold every place of B by themselves while pods of other namespaces wait for one
// (Result.Holder), the controller lets that hold lapse after NamespaceHoldLapse
// (Options.Lapsed). The namespace's pods then count against its share alone, whether it competes
// with others or not, so none of its other pods is upgraded while they hold it, and the other
// namespaces go on. A NamespacedSidecarSet, or a cluster SidecarSet whose pods are all in one
// namespace, has one share: B.

// ReasonNamespaceShare: the pod's namespace already holds its share of maxUnavailable.
const ReasonNamespaceShare = "NamespaceShare"

// NamespaceHoldLapse is how long the pods of one namespace may hold every place of a cluster
// SidecarSet's maxUnavailable while pods of other namespaces wait for one, before the controller
// lets their hold lapse (Options.Lapsed).
const NamespaceHoldLapse = 10 * time.Minute

// NamespaceShare returns the places of maxUnavailable b that the pods of one namespace may hold
// while other namespaces compete for places, n of the total managed pods of the competing
// namespaces being in it: max(1, min(b-1, ceil(b*n/total))), 0 when b is 0.
func NamespaceShare(b, n, total int32) int32 {
	if b <= 0 {
		return 0
	}
	c := int64(1)
	if total > 0 {
		c = (int64(b)*int64(n) + int64(total) - 1) / int64(total) // ceil, without overflow
	}
	return int32(max(1, min(int64(b)-1, c)))
}

// shares is the division of a round's maxUnavailable among namespaces (keyed by their shared
// text, which compares and hashes as a pointer); nil when it does not apply (a
// NamespacedSidecarSet, or pods in one namespace: divided).
type shares struct {
	pods    map[text]int32    // managed pods per namespace
	held    map[text]int32    // places held per namespace, lapsed or not
	born    map[text]int32    // of those, the pods created with the current spec (not upgraded to it)
	holders map[text][]string // the names of the pods holding them
	lapsed  map[string]bool   // Options.Lapsed
	max     int32             // resolved maxUnavailable
	// waiting are the namespaces that compete for places, with ready pods waiting for their
	// upgrade (contend), and competing the managed pods they have.
	waiting   map[text]bool
	competing int32
}

// newShares returns the shares of a round of ss, to count its managed pods into; nil for a
// NamespacedSidecarSet.
func newShares(ss *v1alpha1.SidecarSet, lapsed map[string]bool) *shares {
	if v1alpha1.IsNamespaced(ss) {
		return nil
	}
	return &shares{pods: map[text]int32{}, held: map[text]int32{}, born: map[text]int32{}, holders: map[text][]string{}, lapsed: lapsed}
}

// count counts a managed pod, and a place it holds; born: the pod was created with the current
// spec (a place its namespace holds without the rollout having upgraded it).
func (s *shares) count(p *Pod, holds, born bool) {
	if s == nil {
		return
	}
	s.pods[p.namespace]++
	if holds {
		s.held[p.namespace]++
		s.holders[p.namespace] = append(s.holders[p.namespace], p.Name)
		if born {
			s.born[p.namespace]++
		}
	}
}

// divided returns s once every managed pod is counted if they are in two namespaces or more, and
// the places that count against their namespaces' shares alone: all those of lapsed namespaces,
// and those of pods created with the current spec; nil and 0 otherwise.
func (s *shares) divided() (*shares, int32) {
	if s == nil || len(s.pods) < 2 {
		return nil, 0
	}
	var own int32
	for ns, n := range s.held {
		if s.lapsed[ns.String()] {
			own += n
		} else {
			own += s.born[ns]
		}
	}
	return s, own
}

// holding returns the places held per namespace.
func (s *shares) holding() map[string]int32 {
	out := make(map[string]int32, len(s.held))
	for ns, n := range s.held {
		out[ns.String()] = n
	}
	return out
}

// contend records the namespaces of the pods given (ready candidates the round may take), which
// compete for places: a namespace's share limits its pods only while another one competes.
func (s *shares) contend(pods []*Pod, facts []podFacts, candidates []int, skip func(*Pod) bool) {
	if s == nil {
		return
	}
	s.waiting, s.competing = map[text]bool{}, 0
	for _, i := range candidates {
		if ns := pods[i].namespace; facts[i].readyForSidecar && !skip(pods[i]) && !s.waiting[ns] {
			s.waiting[ns] = true
			s.competing += s.pods[ns]
		}
	}
}

// contested reports whether ready pods of a namespace other than ns wait for their upgrade.
func (s *shares) contested(ns text) bool {
	return len(s.waiting) > 1 || len(s.waiting) == 1 && !s.waiting[ns]
}

// share is namespace ns's share among the competing namespaces (and itself, lapsed, when it does
// not compete).
func (s *shares) share(ns text) int32 {
	return NamespaceShare(s.max, s.pods[ns], s.among(ns))
}

func (s *shares) among(ns text) int32 {
	if s.waiting[ns] {
		return s.competing
	}
	return s.competing + s.pods[ns]
}

// used returns a counter of the places each namespace holds, starting from those held before
// the round; fresh starts from none (a preview's later batches).
func (s *shares) used(fresh bool) map[text]int32 {
	if s == nil {
		return nil
	}
	if fresh {
		return map[text]int32{}
	}
	return maps.Clone(s.held)
}

// take counts a place namespace ns takes in used.
func (s *shares) take(used map[text]int32, ns text) {
	if s != nil {
		used[ns]++
	}
}

// full reports whether namespace ns holds its whole share in used while another namespace's
// pods wait (contested), or at all once its hold lapsed or while pods created with the current
// spec hold places in it (those count against its share alone); an uncontested namespace is
// otherwise bounded by maxUnavailable alone.
func (s *shares) full(used map[text]int32, ns text) bool {
	return s != nil && (s.contested(ns) || s.lapsed[ns.String()] || s.born[ns] > 0) && used[ns] >= s.share(ns)
}

// holder returns the namespace whose counted places (its hold has not lapsed) fill
// maxUnavailable by themselves, "" for none (the first by name, should several).
func (s *shares) holder() string {
	if s == nil || s.max <= 0 {
		return ""
	}
	var out string
	for ns, n := range s.held {
		if name := ns.String(); !s.lapsed[name] && n-s.born[ns] >= s.max && (out == "" || name < out) {
			out = name
		}
	}
	return out
}

// message says why a pod of ns waits for its namespace's share.
func (s *shares) message(ns text) string {
	names := slices.Sorted(slices.Values(s.holders[ns]))
	const shown = 3
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	m := fmt.Sprintf("namespace %s's share of maxUnavailable %d is %d (its %d pods of the %d in namespaces with pods waiting for their upgrade): %d of its pods hold it (%s)",
		ns, s.max, s.share(ns), s.pods[ns], s.among(ns), s.held[ns], list)
	if s.lapsed[ns.String()] {
		m += fmt.Sprintf("; they held every place of maxUnavailable for %s while other namespaces waited, so they count against this share alone", NamespaceHoldLapse)
	} else if b := s.born[ns]; b > 0 {
		m += fmt.Sprintf("; %d of them were created with the current sidecars and are not available: they count against this share alone", b)
	}
	return m
}
