package webhookconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The injection webhooks select the pods they have work for: those a webhook-path SidecarSet may
// select, those that declare a container named like a sidecar of a policy-path SidecarSet that
// may select them (the policies leave those to the webhook), and, within a policy's grace period,
// those its SidecarSets may select. kube-apiserver converts a pod for CEL (about 0.3 ms) before it
// evaluates any match condition, but checks an objectSelector natively (parsed once per webhook),
// so each class of namespace gets one webhook per label key the SidecarSets' selectors require:
// the objectSelector asks for the key (and its values), and excludes the keys of the webhooks
// before it, so that at most one webhook of a class calls the server for a pod; a match condition
// is left only where the selector says more than the webhook needs. A pod that has none of the
// keys never reaches CEL.

// WebhookMatch is what one injection webhook selects: pods its ObjectSelector selects (nil: every
// pod) for which Condition, a CEL match condition, is true ("": no condition).
type WebhookMatch struct {
	ObjectSelector *metav1.LabelSelector
	Condition      string
	// NamespaceSelector, when set, narrows the template's namespaceSelector: the match of the
	// NamespacedSidecarSets' needs selects their namespaces only.
	NamespaceSelector *metav1.LabelSelector
}

// unmatchableKey names the label of a selector that selects no pod (it must both exist and not).
const unmatchableKey = "apps.kruise.io/no-injection-webhook"

// noPods is the match of a webhook that has no pod to receive.
func noPods() WebhookMatch {
	return WebhookMatch{ObjectSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: unmatchableKey, Operator: metav1.LabelSelectorOpExists},
		{Key: unmatchableKey, Operator: metav1.LabelSelectorOpDoesNotExist},
	}}}
}

// requirement is what every pod some SidecarSets select has of one label key: the key, with one of
// values unless exists (any value).
type requirement struct {
	exists bool
	values map[string]bool
}

// add widens r to the pods a selector with representative values also selects (nil: any value).
func (r *requirement) add(values []string) {
	if values == nil {
		r.exists = true
		return
	}
	if r.values == nil {
		r.values = map[string]bool{}
	}
	for _, v := range values {
		r.values[v] = true
	}
}

func (r *requirement) same(o *requirement) bool {
	if r.exists || o.exists {
		return r.exists == o.exists
	}
	if len(r.values) != len(o.values) {
		return false
	}
	for v := range r.values {
		if !o.values[v] {
			return false
		}
	}
	return true
}

// selects and excludes are r as a label selector requirement, and its negation (NotIn selects a
// pod without the key, as the negation must).
func (r *requirement) selects(key string) metav1.LabelSelectorRequirement {
	if r.exists {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpExists}
	}
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: r.sortedValues()}
}

func (r *requirement) excludes(key string) metav1.LabelSelectorRequirement {
	if r.exists {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpDoesNotExist}
	}
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpNotIn, Values: r.sortedValues()}
}

// sortedValues are r's values, sorted (not nil: an In or NotIn requirement lists them).
func (r *requirement) sortedValues() []string {
	return append([]string{}, slices.Sorted(maps.Keys(r.values))...)
}

// cel is r as a CEL term over the pod's labels.
func (r *requirement) cel(key string) string {
	const l = "object.metadata.?labels.orValue({})"
	if r.exists {
		return fmt.Sprintf("(%s in %s)", celpatch.Quote(key), l)
	}
	return fmt.Sprintf("(%s in %s && %s)", celpatch.Quote(key), l, anyOfCEL(l+"["+celpatch.Quote(key)+"]", slices.Sorted(maps.Keys(r.values))))
}

// celWithin is r as a CEL term over the labels of a pod within selects (its value is one of
// within's): not one of the values of within r lacks, when they are fewer than r's, so that a
// key most of whose values are the webhook's needs a short condition. ok is false when the
// term of cel is as short.
func (r *requirement) celWithin(within *requirement, key string) (string, bool) {
	if r.exists || within.exists {
		return "", false
	}
	rest := requirement{values: map[string]bool{}}
	for v := range within.values {
		if !r.values[v] {
			rest.values[v] = true
		}
	}
	if len(rest.values) == 0 || len(rest.values) >= len(r.values) {
		return "", false
	}
	return "!" + rest.cel(key), true
}

// keyNeeds is, for one label key, what the webhooks must receive of the pods that have it.
type keyNeeds struct {
	all        requirement // pods any of the SidecarSets below may select
	webhook    requirement // pods a webhook-path SidecarSet may select
	hasWebhook bool
	policySets []*v1alpha1.SidecarSet // policy-path SidecarSets: pods declaring their sidecars' names
}

// Matches returns the webhooks each class of namespace needs, in order (see above), and
// the SidecarSets that leave them without a label selector, by name. members are the compiled
// members of the policy-path SidecarSets (nil: each defers on its own sidecar names only). The
// needs of cluster SidecarSets come first, then one webhook for the needs that come from
// NamespacedSidecarSets, restricted to their namespaces (see tenantMatch).
func Matches(webhookSets, policySets []*v1alpha1.SidecarSet, members map[string]*celpatch.Member) ([]WebhookMatch, map[string]apps.Widening) {
	isTenant := func(ss *v1alpha1.SidecarSet) bool { return neighbour.TenantNamespace(ss) != "" }
	clusterWebhook := slices.DeleteFunc(slices.Clone(webhookSets), isTenant)
	clusterPolicy := slices.DeleteFunc(slices.Clone(policySets), isTenant)
	out, widened := clusterMatches(clusterWebhook, clusterPolicy, members)
	if m, ok := tenantMatch(webhookSets, policySets, members); ok {
		out = append(out, m)
		for _, ss := range webhookSets {
			if k, _ := apps.RequiredLabel(ss.Spec.Selector); isTenant(ss) && k == "" {
				if widened == nil {
					widened = map[string]apps.Widening{}
				}
				widened[ss.Name] = apps.Widening{Reason: apps.WideningSelectorRequiresNoLabel, CallsServer: true}
			}
		}
	}
	return out, widened
}

// clusterMatches returns the webhooks the cluster SidecarSets need (see Matches).
func clusterMatches(webhookSets, policySets []*v1alpha1.SidecarSet, members map[string]*celpatch.Member) ([]WebhookMatch, map[string]apps.Widening) {
	needs := map[string]*keyNeeds{}
	var keyless []*v1alpha1.SidecarSet
	need := func(ss *v1alpha1.SidecarSet) (*keyNeeds, []string, bool) {
		k, values := apps.RequiredLabel(ss.Spec.Selector)
		if k == "" {
			keyless = append(keyless, ss)
			return nil, nil, false
		}
		if needs[k] == nil {
			needs[k] = &keyNeeds{}
		}
		needs[k].all.add(values)
		return needs[k], values, true
	}
	for _, ss := range webhookSets {
		if n, values, ok := need(ss); ok {
			n.webhook.add(values)
			n.hasWebhook = true
		}
	}
	for _, ss := range policySets {
		if n, _, ok := need(ss); ok {
			n.policySets = append(n.policySets, ss)
		}
	}
	switch {
	case len(keyless) > 0:
		return widened(webhookSets, policySets, keyless, apps.WideningSelectorRequiresNoLabel, members)
	case len(needs) > apps.MaxWebhookLabelKeys:
		return widened(webhookSets, policySets, append(append([]*v1alpha1.SidecarSet(nil), webhookSets...), policySets...), apps.WideningTooManyLabelKeys, members)
	}
	keys := slices.Sorted(maps.Keys(needs))
	out := keyWebhooks(keys, needs, members)
	for matchesSize(out) > MaxMatchesSize {
		k := heaviestKey(keys, needs)
		if k == "" {
			break
		}
		needs[k].all.exists = true
		out = keyWebhooks(keys, needs, members)
	}
	if len(out) == 0 {
		return []WebhookMatch{noPods()}, nil
	}
	return withinSize(out), nil
}

// MaxMatchesSize bounds the webhooks of one class of namespace, as JSON: the configuration holds
// them once per class (two in the shipped template) and must stay below etcd's request limit
// (1.5 MiB by default), or kube-apiserver refuses its writes and no SidecarSet written since is
// served. 50,000 SidecarSets selecting values of a few label keys listed 6 MB of values.
const MaxMatchesSize = 700_000

// keyWebhooks are the webhooks of keys, in order (keyWebhook).
func keyWebhooks(keys []string, needs map[string]*keyNeeds, members map[string]*celpatch.Member) []WebhookMatch {
	var out []WebhookMatch
	for i := range keys {
		if m, ok := keyWebhook(keys[:i], keys[i:], needs, members); ok {
			out = append(out, m)
		}
	}
	return out
}

// heaviestKey is the key whose values weigh most in the webhooks' objectSelectors (its own
// webhook lists them, and every later one again), "" when every key is matched by Exists: widened
// to Exists, its webhook receives every pod with the key, more pods than its SidecarSets select,
// never fewer.
func heaviestKey(keys []string, needs map[string]*keyNeeds) string {
	heaviest, most := "", 0
	for i, k := range keys {
		r := &needs[k].all
		if r.exists {
			continue
		}
		w := 0
		for v := range r.values {
			w += len(v) + 3
		}
		if w *= len(keys) - i; w > most {
			heaviest, most = k, w
		}
	}
	return heaviest
}

// withinSize drops the largest match conditions (the webhook then receives every pod its
// selectors select) until the matches fit MaxMatchesSize.
func withinSize(matches []WebhookMatch) []WebhookMatch {
	for matchesSize(matches) > MaxMatchesSize {
		largest := -1
		for i, m := range matches {
			if m.Condition != "" && (largest < 0 || len(m.Condition) > len(matches[largest].Condition)) {
				largest = i
			}
		}
		if largest < 0 {
			break
		}
		matches[largest].Condition = ""
	}
	return matches
}

// matchesSize is the size of matches as JSON.
func matchesSize(matches []WebhookMatch) int {
	b, err := json.Marshal(matches)
	if err != nil {
		return 0
	}
	return len(b)
}

// widened is the single webhook of a class when the SidecarSets need more than label keys can say
// (see oneWebhook), and the SidecarSets of cause, which leave it without a label selector for
// reason (none when the webhook has no pod to receive).
func widened(webhookSets, policySets, cause []*v1alpha1.SidecarSet, reason string, members map[string]*celpatch.Member) ([]WebhookMatch, map[string]apps.Widening) {
	m := oneWebhook(webhookSets, policySets, members)
	if m.ObjectSelector != nil {
		return []WebhookMatch{m}, nil
	}
	w := apps.Widening{Reason: reason, CallsServer: m.Condition == ""}
	if w.CallsServer && reason == apps.WideningTooManyLabelKeys {
		w.Reason = apps.WideningMatchConditionTooLarge // every selector requires a key: the condition was too large
	}
	out := make(map[string]apps.Widening, len(cause))
	for _, ss := range cause {
		out[ss.Name] = w
	}
	return []WebhookMatch{m}, out
}

// keyWebhook is the webhook of the first of keys: it selects pods that have that key and none of
// the earlier keys (those are another webhook's), and must receive what the SidecarSets of every
// key from this one on need of them. ok is false when they need nothing.
func keyWebhook(earlier, keys []string, needs map[string]*keyNeeds, members map[string]*celpatch.Member) (WebhookMatch, bool) {
	own := needs[keys[0]]
	sel := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{own.all.selects(keys[0])}}
	for _, e := range earlier {
		sel.MatchExpressions = append(sel.MatchExpressions, needs[e].all.excludes(e))
	}
	m := WebhookMatch{ObjectSelector: sel}
	if own.hasWebhook && own.webhook.same(&own.all) {
		return m, true // every pod selected is one a webhook-path SidecarSet may select
	}
	var terms []string
	var policySets []*v1alpha1.SidecarSet
	for _, k := range keys {
		if needs[k].hasWebhook {
			terms = append(terms, needs[k].webhook.cel(k))
		}
		policySets = append(policySets, needs[k].policySets...)
	}
	if within, ok := own.webhook.celWithin(&own.all, keys[0]); own.hasWebhook && ok {
		terms[0] = within // the objectSelector holds the pod to own.all
	}
	terms = append(terms, declaredNames(policySets, members)...)
	if len(terms) == 0 {
		return WebhookMatch{}, false
	}
	if expr := strings.Join(terms, " ||\n"); len(expr) <= MaxConditionSize {
		m.Condition = expr
	}
	return m, true
}

// oneWebhook is the single webhook of a class when the SidecarSets need more than label keys can
// say: every pod, with the match condition of webhookCondition.
func oneWebhook(webhookSets, policySets []*v1alpha1.SidecarSet, members map[string]*celpatch.Member) WebhookMatch {
	switch c := webhookCondition(webhookSets, policySets, members); c {
	case "false":
		return noPods()
	case "true":
		return WebhookMatch{}
	default:
		return WebhookMatch{Condition: c}
	}
}

// ExpandWebhooks returns the webhooks of the injection configuration for matches: each webhook
// the configuration was deployed with (a template: one per class of namespace) becomes one per
// match, named as the template for the first and "<n>.<template>" for the others, with the match's
// objectSelector and condition; the rest of each is the template's. Webhooks named "<n>.<name>"
// after a template are the ones this made before and are replaced. Every webhook's
// namespaceSelector excludes the excluded namespaces (the server's own among them) and the
// namespaces labelled apps.ControlPlaneNamespaceLabel (as OpenKruise's webhook does, and as the
// policies do), natively, whatever the template says: the server never waits on itself, and a
// pod's fate does not depend on the path that serves its SidecarSets.
func ExpandWebhooks(webhooks []admissionregistrationv1.MutatingWebhook, matches []WebhookMatch, excluded []string) []admissionregistrationv1.MutatingWebhook {
	templates := map[string]bool{}
	for i := range webhooks {
		templates[webhooks[i].Name] = true
	}
	var out []admissionregistrationv1.MutatingWebhook
	for i := range webhooks {
		t := &webhooks[i]
		if n, name, ok := strings.Cut(t.Name, "."); ok && templates[name] && isIndex(n) {
			continue // made from template name
		}
		for j, m := range matches {
			w := *t.DeepCopy()
			if j > 0 {
				w.Name = fmt.Sprintf("%d.%s", j, t.Name)
			}
			w.ObjectSelector = &metav1.LabelSelector{}
			if m.ObjectSelector != nil {
				w.ObjectSelector = m.ObjectSelector.DeepCopy()
			}
			w.NamespaceSelector = requiring(excluding(w.NamespaceSelector, excluded), apps.ControlPlaneRequirement())
			if m.NamespaceSelector != nil {
				w.NamespaceSelector = narrowed(w.NamespaceSelector, m.NamespaceSelector)
			}
			w.MatchConditions = nil
			if m.Condition != "" {
				w.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "sidecarset-webhook-path", Expression: m.Condition}}
			}
			out = append(out, w)
		}
	}
	return out
}

// TemplateWebhooks returns webhooks without those ExpandWebhooks made from a template among them
// ("<n>.<template>").
func TemplateWebhooks(webhooks []admissionregistrationv1.MutatingWebhook) []admissionregistrationv1.MutatingWebhook {
	templates := map[string]bool{}
	for i := range webhooks {
		templates[webhooks[i].Name] = true
	}
	var out []admissionregistrationv1.MutatingWebhook
	for i := range webhooks {
		if n, name, ok := strings.Cut(webhooks[i].Name, "."); ok && templates[name] && isIndex(n) {
			continue
		}
		out = append(out, webhooks[i])
	}
	return out
}

// excluding returns sel with a requirement that the namespace is none of excluded, unless sel
// already has it.
func excluding(sel *metav1.LabelSelector, excluded []string) *metav1.LabelSelector {
	if len(excluded) == 0 {
		return sel
	}
	return requiring(sel, metav1.LabelSelectorRequirement{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: slices.Compact(slices.Sorted(slices.Values(excluded)))})
}

// requiring returns sel with the requirement req, unless it already has it.
func requiring(sel *metav1.LabelSelector, req metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if sel != nil {
		out = sel.DeepCopy()
	}
	for _, r := range out.MatchExpressions {
		if equality.Semantic.DeepEqual(r, req) {
			return out
		}
	}
	out.MatchExpressions = append(out.MatchExpressions, req)
	return out
}

// narrowed returns sel with the requirements of by added (both must select a namespace).
func narrowed(sel, by *metav1.LabelSelector) *metav1.LabelSelector {
	out := &metav1.LabelSelector{}
	if sel != nil {
		out = sel.DeepCopy()
	}
	for k, v := range by.MatchLabels {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
	}
	out.MatchExpressions = append(out.MatchExpressions, by.DeepCopy().MatchExpressions...)
	return out
}

// isIndex reports whether s is the decimal index ExpandWebhooks puts in front of a template's name.
func isIndex(s string) bool {
	_, err := strconv.ParseUint(s, 10, 0)
	return err == nil
}

// intakePrefix starts the names of the intake webhooks: "intake.<template webhook>".
const intakePrefix = "intake."

// IntakeWebhooks returns the intake webhooks of the injection configuration: one per template
// webhook (a class of namespace), named "intake.<template webhook>", that sends every pod of the
// class to the server, with no object selector and no condition; namespaces, when set, narrows
// the class to the namespaces it selects (WebhookMatch.NamespaceSelector). They are added while a
// SidecarSet write is under way, before kube-apiserver has loaded the selective webhooks that
// route its pods (see ExpandWebhooks). They fail open (failurePolicy Ignore): they only add pods
// for a few seconds, and a server that stops meanwhile must not have every pod of the cluster
// refused until a leader removes them; the pods the selective webhooks send keep the template's.
func IntakeWebhooks(template []admissionregistrationv1.MutatingWebhook, excluded []string, namespaces *metav1.LabelSelector) []admissionregistrationv1.MutatingWebhook {
	return IntakeWebhooksFor(template, excluded, []WebhookMatch{{NamespaceSelector: namespaces}})
}

// IntakeWebhooksFor is IntakeWebhooks with one set of webhooks per match: the pods of some
// namespaces, or those with a label key.
func IntakeWebhooksFor(template []admissionregistrationv1.MutatingWebhook, excluded []string, matches []WebhookMatch) []admissionregistrationv1.MutatingWebhook {
	out := ExpandWebhooks(TemplateWebhooks(template), matches, excluded)
	ignore := admissionregistrationv1.Ignore
	for i := range out {
		out[i].Name = intakePrefix + out[i].Name
		out[i].FailurePolicy = &ignore
	}
	return out
}

// IsIntakeWebhook reports whether name is an intake webhook's (IntakeWebhooks).
func IsIntakeWebhook(name string) bool { return strings.HasPrefix(name, intakePrefix) }

// SplitIntake returns the webhooks of a configuration without the intake webhooks, and those.
func SplitIntake(webhooks []admissionregistrationv1.MutatingWebhook) (selective, intake []admissionregistrationv1.MutatingWebhook) {
	for i := range webhooks {
		if IsIntakeWebhook(webhooks[i].Name) {
			intake = append(intake, webhooks[i])
		} else {
			selective = append(selective, webhooks[i])
		}
	}
	return selective, intake
}
