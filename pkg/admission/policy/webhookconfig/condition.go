package webhookconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// MaxConditionSize keeps the webhook's condition under CEL's expression size limit (100,000 code
// points); a larger one becomes "true" (the webhook receives every pod, as without a condition).
const MaxConditionSize = 90_000

// webhookCondition is true for pods a webhook-path SidecarSet may select (namespaces are not
// visible to a webhook match condition: the webhook checks them) and for pods that declare a
// container named like a policy-path sidecar (the policies leave those to the webhook). It may be
// true for more pods than that, never for fewer: each selector is represented by one requirement
// every pod it selects meets, grouped by label key, so that the condition stays small with
// thousands of SidecarSets.
func webhookCondition(webhookSets, policySets []*v1alpha1.SidecarSet, members map[string]*celpatch.Member) string {
	reqs := map[string]*requirement{}
	for _, ss := range webhookSets {
		k, vs := apps.RequiredLabel(ss.Spec.Selector)
		if k == "" {
			return "true" // a selector no label is required for
		}
		if reqs[k] == nil {
			reqs[k] = &requirement{}
		}
		reqs[k].add(vs)
	}
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(reqs)) {
		terms = append(terms, reqs[k].cel(k))
	}
	terms = append(terms, declaredNames(policySets, members)...)
	if len(terms) == 0 {
		return "false"
	}
	if expr := strings.Join(terms, " ||\n"); len(expr) <= MaxConditionSize {
		return expr
	}
	return "true"
}

// declaredNames are the terms true for pods that declare, as their own, a container or init
// container named like a sidecar a policy-path SidecarSet defers to the webhook on, in every
// namespace: its own and its cluster neighbours' (its member's deferral names; without a member,
// its own names).
func declaredNames(policySets []*v1alpha1.SidecarSet, members map[string]*celpatch.Member) []string {
	names, initNames := map[string]bool{}, map[string]bool{}
	for _, ss := range policySets {
		if m := members[ss.Name]; m != nil {
			all, _ := m.DeferNames()
			addAll(names, all)
			all, _ = m.DeferInitNames()
			addAll(initNames, all)
			continue
		}
		for i := range ss.Spec.Containers {
			names[ss.Spec.Containers[i].Name] = true
		}
		for i := range ss.Spec.InitContainers {
			initNames[ss.Spec.InitContainers[i].Name] = true
		}
	}
	return declaredTerms(slices.Sorted(maps.Keys(names)), slices.Sorted(maps.Keys(initNames)))
}

// declaredTerms are the terms true for pods that declare, as their own, a container named like
// one of names or an init container named like one of initNames.
func declaredTerms(names, initNames []string) []string {
	var terms []string
	if len(names) > 0 {
		terms = append(terms, fmt.Sprintf("object.spec.containers.exists(c, %s && !(%s))", anyOfCEL("c.name", names), celpatch.IsInjected("c")))
	}
	if len(initNames) > 0 {
		terms = append(terms, fmt.Sprintf("object.spec.?initContainers.orValue([]).exists(c, %s && !(%s))", anyOfCEL("c.name", initNames), celpatch.IsInjected("c")))
	}
	return terms
}

// shortList is the longest list a webhook match condition holds as a CEL list (see anyOfCEL).
const shortList = 8

// anyOfCEL is the webhook match condition term true when the string expression x is one of
// values (label values or container names). A longer list than shortList is one string literal of
// the values between commas, searched for x between commas: kube-apiserver parses and type-checks
// a list literal element by element each time it admits the webhook configuration and again when
// it loads it, and the configuration is written again whenever a SidecarSet changes path (which
// made the lists of the one-key shape's 1,000 NamespacedSidecarSets most of what kube-apiserver
// spent on a bulk apply), a string literal at once. Valid label values and container names hold
// no comma; a pod's value that does (kube-apiserver's validation refuses the pod after admission)
// may match the string, which a match condition allows: it may be true for more pods than the
// SidecarSets select, never for fewer.
func anyOfCEL(x string, values []string) string {
	if len(values) <= shortList {
		return fmt.Sprintf("%s in %s", x, celpatch.StringList(values))
	}
	return fmt.Sprintf("%s.contains(',' + %s + ',')", celpatch.Quote(","+strings.Join(values, ",")+","), x)
}

func addAll(set map[string]bool, items []string) {
	for _, i := range items {
		set[i] = true
	}
}
