package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// PlanInput is everything Plan needs.
type PlanInput struct {
	// SidecarSets are all stored SidecarSets.
	SidecarSets []*v1alpha1.SidecarSet
	// Compiled are the policies this server owns now, by name (to keep their stamps).
	Compiled map[string]*admissionregistrationv1.MutatingAdmissionPolicy
	// Bound says, by policy name, whether its binding is in the cluster as planned; nil means
	// every policy is. A policy without its binding injects nothing: the webhook serves its
	// SidecarSets as within a grace period.
	Bound map[string]bool
	// Loaded says, by policy name, since when the policy has been in the cluster as it is now (its
	// current resourceVersion); unknown means just now.
	Loaded map[string]time.Time
	// ExcludedNamespaces are never injected.
	ExcludedNamespaces []string
	// Now stamps what is compiled anew.
	Now time.Time
	// SortSidecarContainersByName is the injector option of the same name.
	SortSidecarContainersByName bool
	// WebhookOnly serves every SidecarSet by the webhook (--injection=webhook): no policies, and
	// the webhook's condition selects the pods any SidecarSet may select.
	WebhookOnly bool
	// Owner, when set, is the owner reference of every policy and binding (the garbage collector
	// deletes them with it).
	Owner *metav1.OwnerReference
	// Memo, when set, keeps what this plan computes for the next one (see Memo).
	Memo *Memo
	// MaxPolicyRequests is the most SidecarSets asking for the policy path
	// (apps.InjectionPathAnnotation) that the plan serves first, the oldest first: their label
	// values are listed before any other's, they are placed in their group policies first, and
	// the number of SidecarSets sharing their pods does not send them to the webhook. Zero or less
	// serves none first.
	MaxPolicyRequests int
	// Grace is how long a policy stays in the webhook's match condition as well once it is in the
	// cluster as planned: kube-apiserver loads new and changed policies asynchronously, and until it
	// has, the webhook injects the SidecarSet (a pod the policy injected first reaches the webhook
	// with the SidecarSet's current hash and is left alone). A policy still to be created or
	// changed is in the condition too.
	Grace time.Duration
}

// Plan is the desired state of policy injection.
type Plan struct {
	// Results has one entry per SidecarSet, by name.
	Results map[string]Result
	// Policies and Bindings are the objects to own, sorted by name.
	Policies []*admissionregistrationv1.MutatingAdmissionPolicy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// WebhookMatches are the injection webhooks of each class of namespace (see webhookconfig):
	// together they select the pods the webhook has work for (a webhook-path SidecarSet may select
	// them, a policy leaves them to it, or a policy is still within its grace period), so that
	// every other pod is admitted without leaving kube-apiserver.
	WebhookMatches []webhookconfig.WebhookMatch
	// Widened names the SidecarSets that leave the webhooks without a label selector, and why.
	Widened map[string]apps.Widening
	// RecheckAfter, when positive, is when the next grace period ends: plan again then.
	RecheckAfter time.Duration
}

// PlanPolicies compiles every SidecarSet and groups the policy-path ones into group policies.
func PlanPolicies(in PlanInput) (Plan, error) {
	sets := append([]*v1alpha1.SidecarSet(nil), in.SidecarSets...)
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	p := Plan{Results: make(map[string]Result, len(sets))}
	prev := compiledRecords(in.Compiled)
	granted := grantRequests(sets, in.MaxPolicyRequests)
	groupOf := assign(sets, incumbents(prev), granted)
	groups := map[string]*group{}
	var webhookSets, policySets []*v1alpha1.SidecarSet
	members := map[string]*celpatch.Member{}
	memo := in.Memo
	if memo == nil {
		memo = &Memo{}
	}
	near, isBase := memo.neighbours(sets), bases(sets)
	for _, i := range grantedFirst(sets, granted) {
		ss := sets[i]
		stamp := stampFor(ss, prev[ss.Name], in.Now)
		r, m, err := memo.compile(Input{SidecarSet: ss, Neighbours: near[i], Bases: isBase, ExcludedNamespaces: in.ExcludedNamespaces,
			Stamp: stamp, SortSidecarContainersByName: in.SortSidecarContainersByName, Granted: granted[ss.Name]}, isBase[ss.Name])
		if err != nil {
			return Plan{}, err
		}
		// Webhook mode still compiles: a SidecarSet a policy could not serve says why (a
		// NamespacedSidecarSet that a cluster SidecarSet shadows, among others).
		if in.WebhookOnly && r.Path == apps.PathPolicy {
			r, m = webhookMode(), nil
		}
		awaiting := false
		if m != nil && !revisionRecorded(ss) {
			r, m = revisionPending(), nil
			if left := revisionWaitLeft(ss, in.Now); left > 0 {
				// Most likely recorded in a moment: the webhooks are not rewritten for it meanwhile.
				awaiting, r.Message = true, revisionAwaitedMessage
				if p.RecheckAfter == 0 || left < p.RecheckAfter {
					p.RecheckAfter = left
				}
			}
		}
		if m != nil && groupOf.over[ss.Name] {
			r, m = selectorBudget(ss), nil
		}
		if m != nil {
			m = memo.stamped(ss, m, stamp)
			if g := place(groups, groupOf.policyFor(ss), groupKey(ss), m); g != nil {
				g.add(ss, m, record{Hash: ss.Annotations[sidecar.HashAnnotation], CompiledAt: stamp.Format(time.RFC3339), Digest: m.Digest()})
				r.PolicyName, r.Message = g.Name, apps.PolicyInjectsMessage(g.Name)
				policySets = append(policySets, ss)
				members[ss.Name] = m
			} else {
				r = groupFull(groupOf.policyFor(ss))
			}
		}
		if r.Path == apps.PathWebhook && !awaiting {
			webhookSets = append(webhookSets, ss)
		}
		p.Results[ss.Name] = withRequest(r, ss, granted[ss.Name], in.MaxPolicyRequests)
	}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		g := groups[name]
		policy, binding, err := memo.objects(g, in.ExcludedNamespaces)
		if err != nil {
			return Plan{}, err
		}
		if in.Owner != nil {
			policy.OwnerReferences = []metav1.OwnerReference{*in.Owner}
			binding.OwnerReferences = []metav1.OwnerReference{*in.Owner}
		}
		p.Policies = append(p.Policies, policy)
		p.Bindings = append(p.Bindings, binding)
		if left := graceLeft(policy, in); left > 0 {
			// Not yet loaded as planned: the webhook serves its SidecarSets meanwhile.
			webhookSets = append(webhookSets, g.Sets()...)
			if p.RecheckAfter == 0 || left < p.RecheckAfter {
				p.RecheckAfter = left
			}
		}
	}
	p.WebhookMatches, p.Widened = webhookconfig.Matches(webhookSets, policySets, members)
	memo.forget(sets, p.Policies)
	return p, nil
}

// selectorBudget is the result of a SidecarSet whose value is beyond maxNativeValues.
func selectorBudget(ss *v1alpha1.SidecarSet) Result {
	k, vs := apps.RequiredLabel(ss.Spec.Selector)
	return Result{Path: apps.PathWebhook, Reason: apps.ReasonSelectorBudget, Message: fmt.Sprintf(
		"the group policies already list %d label values, which kube-apiserver checks on every request; label %s=%s is served by the injection webhook, cheaper for its pods",
		maxNativeValues, k, slices.Min(vs))}
}

// revisionRecorded reports whether the controller has recorded a revision of ss
// (status.latestRevision), which every pod it injects records. A policy is compiled once and
// kube-apiserver loads it later, so a member compiled before that would go on recording no
// revision after the controller has recorded one; the webhook reads the revision at each
// admission. (After a spec change, both paths record the previous revision until the controller
// records the new one, as OpenKruise's webhook does.)
func revisionRecorded(ss *v1alpha1.SidecarSet) bool {
	return ss.Status.LatestRevision != ""
}

// revisionWait is how long a new SidecarSet waits for the controller to record its revision
// (usually within a second of its creation) before the webhooks serve it. The webhooks would
// serve it only until its policy does, and each change of their match conditions and of a policy
// has kube-apiserver compile them again: waiting spares it two webhook configuration writes per
// SidecarSet created. Meanwhile, as while a policy is written and loaded, a pod the webhooks
// receive for another SidecarSet gets it too, and other pods get it once it is served.
const revisionWait = 2 * time.Second

const revisionAwaitedMessage = "the controller has not recorded a revision of the SidecarSet yet; the webhook serves it if it is not recorded within " +
	"2s of its creation, a policy once it is"

// revisionWaitLeft returns how much of revisionWait is left for ss at now (its creation time is
// stored to the second, so it waits 1 to 2 s).
func revisionWaitLeft(ss *v1alpha1.SidecarSet, now time.Time) time.Duration {
	if ss.CreationTimestamp.IsZero() {
		return 0
	}
	return max(0, ss.CreationTimestamp.Add(revisionWait).Sub(now))
}

// revisionPending is the result of a policy-path SidecarSet whose revision is not recorded yet.
func revisionPending() Result {
	return Result{Path: apps.PathWebhook, Reason: apps.ReasonRevisionPending,
		Message: "the controller has not recorded a revision of the SidecarSet yet; a policy serves it once it has"}
}

func webhookMode() Result {
	return Result{Path: apps.PathWebhook, Reason: apps.ReasonWebhookMode, Message: "the server runs with --injection=webhook"}
}

// record is what a policy's apps.SidecarSetsAnnotation says of one SidecarSet.
type record struct {
	Hash       string `json:"hash"`
	CompiledAt string `json:"compiledAt"`
	Digest     string `json:"digest"`
}

// records reads the apps.SidecarSetsAnnotation of a policy; a malformed one reads as none.
// The map returned is shared: callers only read it.
func records(p *admissionregistrationv1.MutatingAdmissionPolicy) map[string]record {
	if p == nil {
		return map[string]record{}
	}
	return decodedRecords.get(p.Annotations[apps.SidecarSetsAnnotation])
}

// recordCache keeps the records decoded from the annotations seen last: every plan reads those of
// every owned policy, most of them unchanged, and decoding them took a tenth of a plan.
type recordCache struct {
	mu      sync.Mutex
	decoded map[string]map[string]record // by annotation value
}

// maxCachedRecords bounds the cache: it starts over when it holds more annotations than that
// (a thousand policies or revisions of policies).
const maxCachedRecords = 1024

var decodedRecords recordCache

func (c *recordCache) get(annotation string) map[string]record {
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, ok := c.decoded[annotation]; ok {
		return out
	}
	out := map[string]record{}
	if err := json.Unmarshal([]byte(annotation), &out); err != nil {
		out = map[string]record{}
	}
	if c.decoded == nil || len(c.decoded) >= maxCachedRecords {
		c.decoded = map[string]map[string]record{}
	}
	c.decoded[annotation] = out
	return out
}

// Members returns the names of the SidecarSets p injects, as its apps.SidecarSetsAnnotation records.
func Members(p *admissionregistrationv1.MutatingAdmissionPolicy) map[string]bool {
	out := map[string]bool{}
	for name := range records(p) {
		out[name] = true
	}
	return out
}

// Adds reports whether after injects every SidecarSet before injects as before does (the same
// revision, compiled at the same time to the same form): writing after over before only adds
// SidecarSets, which the webhook injects until kube-apiserver has loaded after. A policy not yet
// written (before nil) only adds too.
func Adds(before, after *admissionregistrationv1.MutatingAdmissionPolicy) bool {
	now := records(after)
	for name, r := range records(before) {
		if got, ok := now[name]; !ok || got != r {
			return false
		}
	}
	return true
}

// incumbents are the SidecarSets the owned policies inject (records by SidecarSet name).
func incumbents(prev map[string]record) map[string]bool {
	out := make(map[string]bool, len(prev))
	for name := range prev {
		out[name] = true
	}
	return out
}

// compiledRecords returns the record of each SidecarSet in the owned policies.
func compiledRecords(compiled map[string]*admissionregistrationv1.MutatingAdmissionPolicy) map[string]record {
	out := map[string]record{}
	for _, p := range compiled {
		for name, r := range records(p) {
			out[name] = r
		}
	}
	return out
}

// Replaced returns the SidecarSets whose injection by the owned policies have changes with want:
// a SidecarSet dropped from them, moved to another policy, or injected differently. kube-apiserver
// loads policies asynchronously, so it may still run the previous one for a moment.
func Replaced(have map[string]*admissionregistrationv1.MutatingAdmissionPolicy, want []*admissionregistrationv1.MutatingAdmissionPolicy) []string {
	type at struct {
		policy string
		record
	}
	wanted := map[string]at{}
	for _, w := range want {
		for name, r := range records(w) {
			wanted[name] = at{w.Name, r}
		}
	}
	var out []string
	for _, pname := range slices.Sorted(maps.Keys(have)) {
		recs := records(have[pname])
		for _, name := range slices.Sorted(maps.Keys(recs)) {
			r := recs[name]
			if w, ok := wanted[name]; !ok || w.policy != pname || w.Digest != r.Digest {
				out = append(out, name)
			}
		}
	}
	return out
}

// Withdrawing returns the owned policies (have) whose planned change stops injecting a SidecarSet
// they inject now: their deletion, when want has none of that name, or an update without it.
// kube-apiserver loads policies and webhook configurations asynchronously, each on its own, so
// such a change waits until the webhooks that take those SidecarSets over have been in place for
// the grace period; until then both inject them.
func Withdrawing(have map[string]*admissionregistrationv1.MutatingAdmissionPolicy, want []*admissionregistrationv1.MutatingAdmissionPolicy) []string {
	wanted := make(map[string]*admissionregistrationv1.MutatingAdmissionPolicy, len(want))
	for _, w := range want {
		wanted[w.Name] = w
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(have)) {
		members := records(have[name])
		if len(members) == 0 {
			continue
		}
		after := map[string]record{}
		if w := wanted[name]; w != nil {
			after = records(w)
		}
		for member := range members {
			if _, ok := after[member]; !ok {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// graceLeft is how long the webhook still serves a planned policy's SidecarSet: the whole grace
// period while the cluster's policy differs from the plan (or is missing), else what is left of it
// since the cluster's policy was first seen as it is.
func graceLeft(want *admissionregistrationv1.MutatingAdmissionPolicy, in PlanInput) time.Duration {
	if in.Grace <= 0 {
		return 0
	}
	have := in.Compiled[want.Name]
	if have == nil || !apps.SameJSON(have.Spec, want.Spec) || (in.Bound != nil && !in.Bound[want.Name]) {
		return in.Grace
	}
	since, ok := in.Loaded[want.Name]
	if !ok {
		return in.Grace
	}
	return since.Add(in.Grace).Sub(in.Now)
}

// stampFor keeps the stamp of a SidecarSet compiled from the same spec, and is now otherwise.
func stampFor(ss *v1alpha1.SidecarSet, old record, now time.Time) time.Time {
	if old.Hash != "" && old.Hash == ss.Annotations[sidecar.HashAnnotation] {
		if t, err := time.Parse(time.RFC3339, old.CompiledAt); err == nil {
			return t
		}
	}
	return now.UTC().Truncate(time.Second)
}
