// Package namespacecap is the rule of the per-namespace cap on NamespacedSidecarSets
// (--max-namespaced-sidecarsets-per-namespace), which holds however many creates race near the
// cap, in one replica or across replicas sharing one etcd (far from the cap a burst larger than
// the margin that lands on another replica faster than this one's cache follows can pass it:
// docs/tenancy.md).
//
// A create is first checked before it is written (an admission check counting the namespace's
// objects), which refuses most creates beyond the cap; creates in flight at the same moment are
// each counted without the others, and may all pass it. Near the cap (Near) a create is
// therefore settled again after it is written, at its revision R in etcd: it is kept when the
// namespace held fewer than the cap objects at revision R-1, just before it (Keeps), otherwise
// it is deleted again and refused. The decision depends only on etcd's history, not on the
// replica that makes it nor on when it is made.
//
// Invariants: the objects kept and alive at any revision are never more than the cap (the latest
// of them found fewer than the cap alive before it, and all the others were alive then); without
// deletes in the namespace, exactly the first cap objects by creation revision are kept. A create
// settled while a refused one is still being deleted counts that one too: it can be refused while
// the namespace is at the cap, never let past it.
package namespacecap

import "fmt"

// Flag is the server flag setting the cap.
const Flag = "--max-namespaced-sidecarsets-per-namespace"

// Limit is the most NamespacedSidecarSets one namespace may hold; zero or less is no limit.
type Limit int

// Enabled reports whether there is a limit.
func (l Limit) Enabled() bool { return l > 0 }

// Margin is the distance to the cap within which a namespace is near it: a tenth of the cap plus
// two, so that a cache lagging a few creates, or a burst of creates in flight, cannot pass
// unnoticed.
func (l Limit) Margin() int { return int(l)/10 + 2 }

// Near reports whether a namespace holding n objects (as a cache sees them, with the creates this
// replica has in flight) is within Margin of the cap: its creates are then counted from storage
// before they are written and settled after.
func (l Limit) Near(n int) bool { return l.Enabled() && n+l.Margin() >= int(l) }

// Keeps reports whether a create is kept, given the objects its namespace held just before it
// was written (at its revision minus one): its rank among them by creation is before+1, and only
// the first Limit ranks are kept.
func (l Limit) Keeps(before int) bool { return !l.Enabled() || before < int(l) }

// Refusal is the reason a create in namespace, which held n objects, is refused.
func (l Limit) Refusal(namespace string, n int) error {
	return fmt.Errorf("namespace %s already holds %d NamespacedSidecarSets, the most this server allows in one namespace (%s=%d)",
		namespace, n, Flag, int(l))
}
