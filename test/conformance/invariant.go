package conformance

import "strings"

// Invariant is a property a runner can sample while a step runs. The README gives
// invariantsWhileRunning and orderingInvariants as prose; Classify maps the documented phrasings to
// the checks a runner performs.
type Invariant int

// The invariants runners know how to sample.
const (
	// InvariantUnknown is prose no runner can check mechanically; it is reported, not checked.
	InvariantUnknown Invariant = iota
	// InvariantCountersConsistent: readyPods <= matchedPods and
	// updatedReadyPods <= min(updatedPods, readyPods).
	InvariantCountersConsistent
	// InvariantMaxUnavailable: updatedPods - updatedReadyPods <= maxUnavailable once the controller
	// observed the spec.
	InvariantMaxUnavailable
	// InvariantReadyExcludesStale: a pod whose sidecar status reports an image other than its spec
	// is not counted in readyPods. Status and pods cannot be read atomically, so a runner can only
	// report it.
	InvariantReadyExcludesStale
	// InvariantHotUpgradeOrder: the twins of a hot-upgrade sidecar never both have the empty image,
	// and a twin gets the empty image only while the other one runs its spec image, ready.
	InvariantHotUpgradeOrder
)

// Classify maps an invariant's prose to the check it documents.
func Classify(text string) Invariant {
	t := strings.ToLower(text)
	switch {
	case strings.Contains(t, "empty image"):
		return InvariantHotUpgradeOrder
	case strings.Contains(t, "maxunavailable"):
		return InvariantMaxUnavailable
	case strings.Contains(t, "readypods <= matchedpods") || strings.Contains(t, "updatedreadypods <="):
		return InvariantCountersConsistent
	case strings.Contains(t, "not counted in readypods"):
		return InvariantReadyExcludesStale
	}
	return InvariantUnknown
}
