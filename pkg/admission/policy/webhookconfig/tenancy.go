package webhookconfig

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The webhook needs that come from NamespacedSidecarSets (their webhook-path selectors, the names
// their policies and the cluster SidecarSets' policies defer on in their namespace, and the
// namespaces cluster SidecarSets hand off, see neighbour.ScopeOf) are never merged into the
// webhooks of the cluster SidecarSets: one more webhook per class of namespace receives them,
// whose namespaceSelector lists their namespaces and whose match condition asks, per namespace,
// for what that namespace needs. So a NamespacedSidecarSet changes which pods of its own
// namespace reach the server, never those of another namespace, and uses none of the cluster
// webhooks' label keys, values or condition size. A pod of such a namespace may be received by
// both a cluster webhook and this one: the injector is idempotent (SkipInjected).

// maxTenantCondition is the most characters of match condition one namespace's needs take; a
// namespace that needs more receives every pod of its own (and only of its own).
const maxTenantCondition = 4_000

// tenantNeeds is what the webhook must receive of the pods of one namespace.
type tenantNeeds struct {
	every     bool                    // every pod
	reqs      map[string]*requirement // pods meeting one of these, by label key
	names     map[string]bool         // pods declaring a container of one of these names
	initNames map[string]bool         // or an init container
}

// need adds the pods a selector may select.
func (n *tenantNeeds) need(sel *metav1.LabelSelector) {
	k, vs := apps.RequiredLabel(sel)
	if k == "" {
		n.every = true
		return
	}
	if n.reqs[k] == nil {
		n.reqs[k] = &requirement{}
	}
	n.reqs[k].add(vs)
}

// deferredBy adds the pods of namespace ns that the policy of ss, the policy-path
// NamespacedSidecarSet compiled as m, leaves to the webhook: those declaring a sidecar name its
// member defers on there (without a member, one of its own sidecar names).
func (n *tenantNeeds) deferredBy(ss *v1alpha1.SidecarSet, m *celpatch.Member, ns string) {
	if m == nil {
		addAll(n.names, sidecarNames(ss.Spec.Containers))
		addAll(n.initNames, sidecarNames(ss.Spec.InitContainers))
		return
	}
	names, namesIn := m.DeferNames()
	addAll(n.names, names)
	addAll(n.names, namesIn[ns])
	initNames, initNamesIn := m.DeferInitNames()
	addAll(n.initNames, initNames)
	addAll(n.initNames, initNamesIn[ns])
}

// cel is the condition term of namespace ns.
func (n *tenantNeeds) cel(ns string) string {
	inNS := "request.namespace == " + celpatch.Quote(ns)
	if n.every {
		return inNS
	}
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(n.reqs)) {
		terms = append(terms, n.reqs[k].cel(k))
	}
	terms = append(terms, declaredTerms(slices.Sorted(maps.Keys(n.names)), slices.Sorted(maps.Keys(n.initNames)))...)
	expr := strings.Join(terms, " ||\n")
	if len(expr) > maxTenantCondition {
		return inNS
	}
	return inNS + " && (" + expr + ")"
}

// tenantMatch is the webhook of the needs that come from NamespacedSidecarSets; ok is false when
// there are none.
func tenantMatch(webhookSets, policySets []*v1alpha1.SidecarSet, members map[string]*celpatch.Member) (WebhookMatch, bool) {
	byNS := map[string]*tenantNeeds{}
	at := func(ns string) *tenantNeeds {
		if byNS[ns] == nil {
			byNS[ns] = &tenantNeeds{reqs: map[string]*requirement{}, names: map[string]bool{}, initNames: map[string]bool{}}
		}
		return byNS[ns]
	}
	for _, ss := range webhookSets {
		if ns := neighbour.TenantNamespace(ss); ns != "" {
			at(ns).need(ss.Spec.Selector)
		}
	}
	for _, ss := range policySets {
		m := members[ss.Name]
		if ns := neighbour.TenantNamespace(ss); ns != "" {
			at(ns).deferredBy(ss, m, ns)
			continue
		}
		if m == nil {
			continue
		}
		_, namesIn := m.DeferNames()
		for ns, names := range namesIn {
			addAll(at(ns).names, names)
		}
		_, initNamesIn := m.DeferInitNames()
		for ns, names := range initNamesIn {
			addAll(at(ns).initNames, names)
		}
		for _, ns := range m.Handoff() {
			at(ns).need(ss.Spec.Selector)
		}
	}
	if len(byNS) == 0 {
		return WebhookMatch{}, false
	}
	namespaces := slices.Sorted(maps.Keys(byNS))
	terms := make([]string, len(namespaces))
	for i, ns := range namespaces {
		terms[i] = "(" + byNS[ns].cel(ns) + ")"
	}
	fitTerms(namespaces, terms)
	m := WebhookMatch{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: namespaces}}}}
	if cond := strings.Join(terms, " ||\n"); len(cond) <= MaxConditionSize {
		m.Condition = cond
	}
	return m, true
}

// fitTerms keeps the namespaces' terms of the condition within MaxConditionSize together by
// giving each namespace an equal share of it: a term larger than its share becomes its namespace
// alone, every pod of which the webhook then receives. What the webhook receives of a namespace
// thus depends on its own needs and on how many namespaces have some, never on how much the
// others need: writes in one namespace cannot send another's pods to the server. With more
// namespaces than their names alone fit, the caller drops the condition.
func fitTerms(namespaces, terms []string) {
	if len(terms) == 0 {
		return
	}
	room := (MaxConditionSize - len(" ||\n")*(len(terms)-1)) / len(terms)
	for i, t := range terms {
		if len(t) > room {
			terms[i] = "(request.namespace == " + celpatch.Quote(namespaces[i]) + ")"
		}
	}
}

func sidecarNames(list []v1alpha1.SidecarContainer) []string {
	out := make([]string, len(list))
	for i := range list {
		out[i] = list[i].Name
	}
	return out
}
