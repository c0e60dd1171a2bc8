package policy

import (
	"fmt"
	"sort"

	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Requests: an operator decides which SidecarSets keep injecting while the server is down by
// asking for the policy path (apps.InjectionPathAnnotation). The cluster SidecarSets that ask, up
// to PlanInput.MaxPolicyRequests of them, the oldest first (then by name: a later request never
// takes an earlier one's place), are granted: their label values are listed first within the
// value budget, they are placed first in their group policies, and their neighbours do not send
// them to the webhook (ManyNeighbours), so a platform-wide SidecarSet that selects every pod with a
// common label gets a policy. What a policy cannot express still goes to the webhook, and the
// Injected condition says so with the reason.

// grantRequests returns the names of the SidecarSets among sets whose request is granted.
func grantRequests(sets []*v1alpha1.SidecarSet, limit int) map[string]bool {
	var asking []*v1alpha1.SidecarSet
	for _, ss := range sets {
		if apps.AsksForPolicy(ss.Annotations) && neighbour.TenantNamespace(ss) == "" {
			asking = append(asking, ss)
		}
	}
	sort.SliceStable(asking, func(i, j int) bool {
		a, b := asking[i].CreationTimestamp, asking[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return asking[i].Name < asking[j].Name
	})
	out := map[string]bool{}
	for _, ss := range asking[:min(len(asking), max(0, limit))] {
		out[ss.Name] = true
	}
	return out
}

// grantedFirst returns the indexes of sets, the granted SidecarSets first, each part in the
// order of sets: the granted are placed in their group policies before the others.
func grantedFirst(sets []*v1alpha1.SidecarSet, granted map[string]bool) []int {
	order := make([]int, 0, len(sets))
	for i, ss := range sets {
		if granted[ss.Name] {
			order = append(order, i)
		}
	}
	for i, ss := range sets {
		if !granted[ss.Name] {
			order = append(order, i)
		}
	}
	return order
}

// withRequest adds to the result of a SidecarSet asking for the policy path and served by the
// webhook why its request is not met (not while its first revision is awaited, for a moment).
func withRequest(r Result, ss *v1alpha1.SidecarSet, granted bool, limit int) Result {
	if r.Path != apps.PathWebhook || r.Reason == apps.ReasonRevisionPending || !apps.AsksForPolicy(ss.Annotations) || neighbour.TenantNamespace(ss) != "" {
		return r
	}
	if granted {
		r.Message += fmt.Sprintf("; it asks for a policy (%s), which cannot serve it for this reason", apps.InjectionPathAnnotation)
	} else {
		r.Message += fmt.Sprintf("; it asks for a policy (%s), but %d older SidecarSets do too, the most served first (--max-policy-path-requests)",
			apps.InjectionPathAnnotation, max(0, limit))
	}
	return r
}
