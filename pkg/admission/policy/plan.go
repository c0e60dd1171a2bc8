package policy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// CompiledAtAnnotation on a compiled policy records Input.Stamp (RFC 3339): recompiling the same
// spec keeps it, so an unchanged SidecarSet never rewrites its policy.
const CompiledAtAnnotation = "apps.kruise.io/compiled-at"

// PlanInput is everything Plan needs.
type PlanInput struct {
	// SidecarSets are all stored SidecarSets.
	SidecarSets []*v1alpha1.SidecarSet
	// Compiled are the policies this server owns now, by name (to keep their stamps).
	Compiled map[string]*admissionregistrationv1.MutatingAdmissionPolicy
	// ExcludedNamespaces are never injected.
	ExcludedNamespaces []string
	// Now stamps what is compiled anew.
	Now time.Time
	// SortSidecarContainersByName is the injector option of the same name.
	SortSidecarContainersByName bool
	// WebhookOnly serves every SidecarSet by the webhook (--injection=webhook): no policies, and
	// the webhook's condition selects the pods any SidecarSet may select.
	WebhookOnly bool
	// Grace is how long a policy compiled anew stays in the webhook's match condition as well:
	// kube-apiserver loads new and changed policies asynchronously, and until it has, the webhook
	// injects the SidecarSet (a pod the policy injected first reaches the webhook with the
	// SidecarSet's current hash and is left alone).
	Grace time.Duration
}

// Plan is the desired state of policy injection.
type Plan struct {
	// Results has one entry per SidecarSet, by name.
	Results map[string]Result
	// Policies and Bindings are the objects to own, sorted by name.
	Policies []*admissionregistrationv1.MutatingAdmissionPolicy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// WebhookCondition is the CEL match condition of the injection webhook: true for the pods the
	// webhook has work for (a webhook-path SidecarSet may select them, a policy leaves them to it,
	// or a policy is still within its grace period), so that every other pod is admitted without
	// leaving kube-apiserver.
	WebhookCondition string
	// RecheckAfter, when positive, is when the next grace period ends: plan again then.
	RecheckAfter time.Duration
}

// PlanPolicies compiles every SidecarSet.
func PlanPolicies(in PlanInput) (Plan, error) {
	sets := append([]*v1alpha1.SidecarSet(nil), in.SidecarSets...)
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	p := Plan{Results: make(map[string]Result, len(sets))}
	var webhookSets, policySets []*v1alpha1.SidecarSet
	for i, ss := range sets {
		others := append(append([]*v1alpha1.SidecarSet(nil), sets[:i]...), sets[i+1:]...)
		r, err := Compile(Input{SidecarSet: ss, Others: others, ExcludedNamespaces: in.ExcludedNamespaces,
			Stamp: stampFor(ss, in.Compiled[PolicyName(ss.Name)], in.Now), SortSidecarContainersByName: in.SortSidecarContainersByName})
		if err != nil {
			return Plan{}, err
		}
		if in.WebhookOnly && r.Path == PathPolicy {
			r = Result{Path: PathWebhook, Reason: ReasonWebhookMode, Message: "the server runs with --injection=webhook"}
		}
		p.Results[ss.Name] = r
		switch r.Path {
		case PathPolicy:
			p.Policies = append(p.Policies, r.Policy)
			p.Bindings = append(p.Bindings, r.Binding)
			policySets = append(policySets, ss)
			if left := graceLeft(r.Policy, in); left > 0 {
				webhookSets = append(webhookSets, ss)
				if p.RecheckAfter == 0 || left < p.RecheckAfter {
					p.RecheckAfter = left
				}
			}
		case PathWebhook:
			webhookSets = append(webhookSets, ss)
		}
	}
	p.WebhookCondition = webhookCondition(webhookSets, policySets)
	return p, nil
}

// graceLeft is how long the compiled policy stays within its grace period.
func graceLeft(p *admissionregistrationv1.MutatingAdmissionPolicy, in PlanInput) time.Duration {
	stamp, err := time.Parse(time.RFC3339, p.Annotations[CompiledAtAnnotation])
	if err != nil || in.Grace <= 0 {
		return 0
	}
	return stamp.Add(in.Grace).Sub(in.Now)
}

// stampFor keeps the stamp of a policy compiled from the same spec, and is now otherwise.
func stampFor(ss *v1alpha1.SidecarSet, old *admissionregistrationv1.MutatingAdmissionPolicy, now time.Time) time.Time {
	if old != nil && old.Annotations[HashAnnotation] == ss.Annotations[sidecar.HashAnnotation] {
		if t, err := time.Parse(time.RFC3339, old.Annotations[CompiledAtAnnotation]); err == nil {
			return t
		}
	}
	return now.UTC().Truncate(time.Second)
}

// webhookCondition is true for pods a webhook-path SidecarSet's selector may select (namespaces
// are not visible to a webhook match condition: the webhook checks them) and for pods that
// declare a container named like a policy-path sidecar (the policies leave those to the webhook).
func webhookCondition(webhookSets, policySets []*v1alpha1.SidecarSet) string {
	var terms []string
	for _, ss := range webhookSets {
		terms = append(terms, selectorCEL(ss.Spec.Selector))
	}
	names, initNames := map[string]bool{}, map[string]bool{}
	for _, ss := range policySets {
		for i := range ss.Spec.Containers {
			names[ss.Spec.Containers[i].Name] = true
		}
		for i := range ss.Spec.InitContainers {
			initNames[ss.Spec.InitContainers[i].Name] = true
		}
	}
	if len(names) > 0 {
		terms = append(terms, fmt.Sprintf("object.spec.containers.exists(c, c.name in %s && !(%s))", stringList(sortedKeys(names)), isInjected("c")))
	}
	if len(initNames) > 0 {
		terms = append(terms, fmt.Sprintf("object.spec.?initContainers.orValue([]).exists(c, c.name in %s && !(%s))", stringList(sortedKeys(initNames)), isInjected("c")))
	}
	if len(terms) == 0 {
		return "false"
	}
	return strings.Join(dedupe(terms), " ||\n")
}

// selectorCEL is sel as a CEL predicate on the object's labels.
func selectorCEL(sel *metav1.LabelSelector) string {
	const l = "object.metadata.?labels.orValue({})"
	var parts []string
	for _, k := range sortedKeys(sel.MatchLabels) {
		parts = append(parts, fmt.Sprintf("(%[1]s in %[2]s && %[2]s[%[1]s] == %[3]s)", quote(k), l, quote(sel.MatchLabels[k])))
	}
	for _, r := range sel.MatchExpressions {
		k := quote(r.Key)
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			parts = append(parts, fmt.Sprintf("(%[1]s in %[2]s && %[2]s[%[1]s] in %[3]s)", k, l, stringList(r.Values)))
		case metav1.LabelSelectorOpNotIn:
			parts = append(parts, fmt.Sprintf("!(%[1]s in %[2]s && %[2]s[%[1]s] in %[3]s)", k, l, stringList(r.Values)))
		case metav1.LabelSelectorOpExists:
			parts = append(parts, fmt.Sprintf("(%s in %s)", k, l))
		case metav1.LabelSelectorOpDoesNotExist:
			parts = append(parts, fmt.Sprintf("!(%s in %s)", k, l))
		}
	}
	if len(parts) == 0 {
		return "true"
	}
	return "(" + strings.Join(parts, " && ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	out := ss[:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Describe says which path injects ss among the stored SidecarSets all (ss may be among them),
// as PlanPolicies decides, for the /rollout view.
func Describe(ss *v1alpha1.SidecarSet, all []*v1alpha1.SidecarSet, webhookOnly bool) *v1alpha1.RolloutInjection {
	others := make([]*v1alpha1.SidecarSet, 0, len(all))
	for _, o := range all {
		if o.Name != ss.Name {
			others = append(others, o)
		}
	}
	r, err := Compile(Input{SidecarSet: ss, Others: others})
	if err != nil {
		return &v1alpha1.RolloutInjection{Path: string(PathWebhook), Reason: "CompileError", Message: err.Error()}
	}
	if webhookOnly && r.Path == PathPolicy {
		r = Result{Path: PathWebhook, Reason: ReasonWebhookMode, Message: "the server runs with --injection=webhook"}
	}
	out := &v1alpha1.RolloutInjection{Path: string(r.Path), Reason: r.Reason, Message: r.Message}
	if r.Policy != nil {
		out.Policy = r.Policy.Name
	}
	return out
}
