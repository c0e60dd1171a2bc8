// Package plan is the pure core of the policy sync: from everything the controller gathered (the
// stored SidecarSets, the owned policies, bindings and webhook configurations as observed, since
// when each has been as it is, the time) it decides one pass: the writes, in order, the
// SidecarSets held at the generation applied before, and those that settle for a grace period.
// It does no I/O and reads no clock.
//
// The algorithm: policy.PlanPolicies gives the objects wanted; the webhooks come first (they serve
// every SidecarSet whose policy is not loaded as planned); a planned change that withdraws an
// owned policy from a SidecarSet (policy.Withdrawing) waits, the policy and its binding kept as
// they are and its SidecarSets held, until the webhooks have been in place, as observed, for the
// grace period; then policies, then bindings, so that a binding never names a missing policy (a
// binding whose policy is being created is written only if that create succeeds).
//
// Invariants (tested by simulation in plan_test.go): a SidecarSet served once is never left
// without a policy or a webhook serving it, however long kube-apiserver takes to load a write
// within the grace period; policies are withdrawn only after the webhooks that take over have
// been in place for the grace period; repeated passes over an unchanged cluster converge to no
// writes.
package plan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/admission/policy/webhookconfig"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Input is everything one pass needs, as gathered.
type Input struct {
	// SidecarSets are all stored SidecarSets.
	SidecarSets []*v1alpha1.SidecarSet
	// Policies and Bindings are the owned ones in the main cluster, as observed.
	Policies []*admissionregistrationv1.MutatingAdmissionPolicy
	Bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	// Template is the shipped webhook configuration the active one is rendered from; nil when none
	// is configured or it does not exist (the webhooks are then left alone).
	Template *admissionregistrationv1.MutatingWebhookConfiguration
	// Active is the active webhook configuration (ActiveWebhooks(Template.Name)); nil when missing.
	Active *admissionregistrationv1.MutatingWebhookConfiguration
	// Intake is the configuration of the intake webhooks (IntakeWebhooks(Template.Name)); nil when
	// missing.
	Intake *admissionregistrationv1.MutatingWebhookConfiguration
	// Since is, by key (PolicyKey, BindingKey, WebhooksKey), since when each object has been as it
	// is now (Tracker.Observe); a missing key reads as Now.
	Since map[string]time.Time
	// Now is the time of this pass.
	Now time.Time
	// Grace is policy.PlanInput.Grace: how long kube-apiserver may take to load a write.
	Grace time.Duration
	// LoadDelay is how long kube-apiserver may take to load a write of the webhook configuration:
	// the intake webhooks (webhookconfig.IntakeWebhooks) are removed only once the selective webhooks
	// have been in place that long, and their hold has passed by as much.
	LoadDelay time.Duration
	// ExcludedNamespaces, SortSidecarContainersByName, MaxPolicyRequests, WebhookOnly, Owner and Memo are passed to
	// policy.PlanPolicies.
	ExcludedNamespaces          []string
	SortSidecarContainersByName bool
	MaxPolicyRequests           int
	WebhookOnly                 bool
	Owner                       *metav1.OwnerReference
	Memo                        *policy.Memo
	// Version, when set, is recorded on the active webhook configuration
	// (apps.ServerVersionAnnotation).
	Version string
}

// Op is what a write does.
type Op string

// The operations of a write.
const (
	Create Op = "Create"
	Update Op = "Update"
	Delete Op = "Delete"
)

// Kind is the kind of object a write is for.
type Kind string

// The kinds of object the sync writes.
const (
	Webhooks Kind = "MutatingWebhookConfiguration"
	Policy   Kind = "MutatingAdmissionPolicy"
	Binding  Kind = "MutatingAdmissionPolicyBinding"
)

// Write is one object's write.
type Write struct {
	Op   Op
	Kind Kind
	Name string
	// Object is what to create or update (for an update, with the resourceVersion observed); nil
	// for a delete.
	Object metav1.Object
	// If, when set, makes the write depend on an earlier one's outcome.
	If *Condition
	// Holds are the SidecarSets held at the generation applied before when this write fails.
	Holds []string
	// Reason says why the write is planned.
	Reason string
	// Adds tells a policy update that only adds SidecarSets (policy.Adds): the policy as it is
	// injects its members as planned, and the webhook injects the new ones until it is written, so
	// the update may wait.
	Adds bool
}

// Key names the object written (as Condition.Key does).
func (w Write) Key() string { return Key(w.Kind, w.Name) }

// Condition ties a write to the outcome of an earlier one.
type Condition struct {
	// Key is the earlier write's (Write.Key); a write that is not planned counts as succeeded.
	Key string
	// Failed runs the write only when that write failed or was skipped; otherwise only when it
	// succeeded.
	Failed bool
}

// Holds reports whether the condition holds after the writes that failed or were skipped.
func (c *Condition) Holds(failed map[string]bool) bool { return c == nil || failed[c.Key] == c.Failed }

// Result is one pass's decision.
type Result struct {
	// Writes are the writes in order: the webhook configurations, then policies, then bindings
	// (within a kind, creates and updates by name, then deletes by name).
	Writes []Write
	// Held are the SidecarSets held at the generation applied before whatever the writes do, with
	// the reason; a failed write holds its Holds as well (HeldAfter).
	Held map[string]string
	// Settling are the SidecarSets whose previous policy is replaced (policy.Replaced):
	// kube-apiserver may run it for another grace period; by name, with the reason.
	Settling map[string]string
	// Withdrawing are the owned policies kept as they are although the plan withdraws them from a
	// SidecarSet, until WithdrawAfter.
	Withdrawing   []string
	WithdrawAfter time.Duration
	// RecheckAfter, when positive, is when to plan again (a grace period ends).
	RecheckAfter time.Duration
	// Results, Widened and WebhookMatches are PlanPolicies's.
	Results        map[string]policy.Result
	Widened        map[string]apps.Widening
	WebhookMatches []webhookconfig.WebhookMatch

	grace       time.Duration
	generations map[string]int64
}

// SelectsEveryPod reports whether a webhook selects pods by no label at all (neither an object
// nor a namespace selector narrows it).
func (r Result) SelectsEveryPod() bool {
	for _, m := range r.WebhookMatches {
		if m.NamespaceSelector == nil && (m.ObjectSelector == nil || len(m.ObjectSelector.MatchLabels)+len(m.ObjectSelector.MatchExpressions) == 0) {
			return true
		}
	}
	return false
}

// HeldAfter returns the SidecarSets held once the writes are done, failed naming those that
// failed (by Write.Key; skipped writes hold nothing more than the one they depend on).
func (r Result) HeldAfter(failed map[string]bool) map[string]bool {
	held := make(map[string]bool, len(r.Held))
	for name := range r.Held {
		held[name] = true
	}
	for _, w := range r.Writes {
		if failed[w.Key()] {
			for _, name := range w.Holds {
				held[name] = true
			}
		}
	}
	return held
}

// State is what the sync records between passes: the generation of each SidecarSet whose
// injection objects are applied, and until when each settling SidecarSet settles.
type State struct {
	Applied  map[string]int64
	Settling map[string]time.Time
}

// Next returns the state after the writes, done at writtenAt, with failed those that failed: held
// SidecarSets keep the generation applied before, the others have theirs applied; settling ends
// at its time, and the SidecarSets of Settling settle for a grace period from writtenAt.
func (r Result) Next(prev State, failed map[string]bool, writtenAt time.Time) State {
	held := r.HeldAfter(failed)
	next := State{Applied: make(map[string]int64, len(r.generations)), Settling: map[string]time.Time{}}
	for name, g := range r.generations {
		if !held[name] {
			next.Applied[name] = g
		} else if g, ok := prev.Applied[name]; ok {
			next.Applied[name] = g
		}
	}
	for name, until := range prev.Settling {
		if writtenAt.Before(until) {
			next.Settling[name] = until
		}
	}
	for name := range r.Settling {
		next.Settling[name] = writtenAt.Add(r.grace)
	}
	return next
}

// NotReady returns the SidecarSets of the pass that are not ready at now in state s.
func (r Result) NotReady(s State, now time.Time) map[string]bool {
	out := map[string]bool{}
	for name, g := range r.generations {
		if !s.Ready(name, g, now) {
			out[name] = true
		}
	}
	return out
}

// SettledAt returns when the next SidecarSet of s that settles after now does (zero when none).
func (s State) SettledAt(now time.Time) time.Time {
	var at time.Time
	for _, until := range s.Settling {
		if until.After(now) && (at.IsZero() || until.Before(at)) {
			at = until
		}
	}
	return at
}

// Ready reports whether the SidecarSet named name is applied at generation and settled at now.
func (s State) Ready(name string, generation int64, now time.Time) bool {
	g, ok := s.Applied[name]
	until, settling := s.Settling[name]
	return ok && g >= generation && (!settling || !now.Before(until))
}

// Sync plans one pass of the policy sync.
func Sync(in Input) (Result, error) {
	compiled := make(map[string]*admissionregistrationv1.MutatingAdmissionPolicy, len(in.Policies))
	for _, p := range in.Policies {
		compiled[p.Name] = p
	}
	bindings := make(map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding, len(in.Bindings))
	bound := make(map[string]bool, len(in.Bindings))
	for _, b := range in.Bindings {
		bindings[b.Name] = b
		bound[b.Spec.PolicyName] = b.Name == b.Spec.PolicyName && b.Spec.MatchResources == nil
	}
	p, err := policy.PlanPolicies(policy.PlanInput{SidecarSets: in.SidecarSets, Compiled: compiled, Bound: bound, Owner: in.Owner,
		Loaded: loaded(in), ExcludedNamespaces: in.ExcludedNamespaces, Now: in.Now, SortSidecarContainersByName: in.SortSidecarContainersByName,
		Grace: in.Grace, WebhookOnly: in.WebhookOnly, Memo: in.Memo, MaxPolicyRequests: in.MaxPolicyRequests})
	if err != nil {
		return Result{}, err
	}
	r := Result{Held: map[string]string{}, Settling: map[string]string{}, RecheckAfter: p.RecheckAfter, Results: p.Results,
		Widened: p.Widened, WebhookMatches: p.WebhookMatches, grace: in.Grace, generations: make(map[string]int64, len(in.SidecarSets))}
	for _, ss := range in.SidecarSets {
		r.generations[ss.Name] = ss.Generation
		if p.Results[ss.Name].Reason == apps.ReasonRevisionPending {
			// Not observed until its policy serves it: the webhook serves it only meanwhile.
			r.Held[ss.Name] = "a policy serves it once the controller has recorded its revision"
		}
	}
	// Policies that stop injecting SidecarSets wait for the webhooks that take them over;
	// meanwhile kube-apiserver runs them, injecting the versions before into pods those versions
	// alone select, which the intake keeps sending to the webhook.
	withdrawing := policy.Withdrawing(compiled, p.Policies)
	var intakeRecheck time.Duration
	r.Writes, intakeRecheck = webhookWrites(in, p.WebhookMatches, sortedKeys(p.Results), len(withdrawing) > 0)
	if intakeRecheck > 0 && (r.RecheckAfter <= 0 || intakeRecheck < r.RecheckAfter) {
		r.RecheckAfter = intakeRecheck
	}
	wantPolicies, wantBindings := p.Policies, p.Bindings
	if r.WithdrawAfter = withdrawWait(in, len(r.Writes) > 0); r.WithdrawAfter > 0 {
		r.Withdrawing = withdrawing
		wantPolicies, wantBindings = keep(r.Withdrawing, compiled, bindings, wantPolicies, wantBindings)
		for _, name := range r.Withdrawing {
			for _, ss := range members(compiled[name], p.Policies) {
				r.Held[ss] = fmt.Sprintf("policy %s stops injecting it once the webhooks have served it for the grace period", name)
			}
		}
		if len(r.Withdrawing) > 0 && (r.RecheckAfter <= 0 || r.WithdrawAfter < r.RecheckAfter) {
			r.RecheckAfter = r.WithdrawAfter
		}
	}
	if len(r.Withdrawing) == 0 {
		r.WithdrawAfter = 0
	}
	served := servedBy(p.Results)
	for _, w := range diff(Policy, wantPolicies, compiled, served, nil, policySpec) {
		if w.Op == Update {
			w.Adds = policy.Adds(compiled[w.Name], w.Object.(*admissionregistrationv1.MutatingAdmissionPolicy))
		}
		r.Writes = append(r.Writes, w)
	}
	r.Writes = append(r.Writes, diff(Binding, wantBindings, bindings, served, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string {
		if _, ok := compiled[b.Spec.PolicyName]; ok {
			return ""
		}
		return b.Spec.PolicyName // created now: its binding waits for it
	}, bindingSpec)...)
	for _, name := range policy.Replaced(compiled, p.Policies) {
		r.Settling[name] = "kube-apiserver may still run the policy that injected it before"
	}
	return r, nil
}

// loaded is, by owned policy, since when it and its binding have been as they are
// (policy.PlanInput.Loaded): the later of the two.
func loaded(in Input) map[string]time.Time {
	out := make(map[string]time.Time, len(in.Policies))
	for _, p := range in.Policies {
		out[p.Name] = since(in, PolicyKey(p.Name))
	}
	for _, b := range in.Bindings {
		if at, ok := out[b.Spec.PolicyName]; ok {
			if s := since(in, BindingKey(b.Name)); s.After(at) {
				out[b.Spec.PolicyName] = s
			}
		}
	}
	return out
}

func since(in Input, key string) time.Time {
	if at, ok := in.Since[key]; ok {
		return at
	}
	return in.Now
}

// withdrawWait is how long a policy that stops injecting a SidecarSet must still wait for the
// webhooks that take it over (policy.Withdrawing): until they have been in place, as observed, for
// the grace period; the whole period when they are written in this pass (written or not, they are
// not in place before), and no time without webhooks to wait for.
func withdrawWait(in Input, webhooksWritten bool) time.Duration {
	switch {
	case in.Template == nil || in.Grace <= 0:
		return 0
	case webhooksWritten || in.Active == nil:
		return in.Grace
	}
	return since(in, WebhooksKey(in.Active.Name)).Add(in.Grace).Sub(in.Now)
}

// keep returns the wanted policies and bindings with the owned policies named kept, and their
// bindings, as they are.
func keep(kept []string, have map[string]*admissionregistrationv1.MutatingAdmissionPolicy, haveBindings map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding,
	want []*admissionregistrationv1.MutatingAdmissionPolicy, wantBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding,
) ([]*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	if len(kept) == 0 {
		return want, wantBindings
	}
	policies := slices.DeleteFunc(slices.Clone(want), func(p *admissionregistrationv1.MutatingAdmissionPolicy) bool { return slices.Contains(kept, p.Name) })
	bindings := slices.DeleteFunc(slices.Clone(wantBindings), func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) bool {
		return slices.Contains(kept, b.Spec.PolicyName)
	})
	for _, name := range kept {
		policies = append(policies, have[name])
		if b := haveBindings[name]; b != nil {
			bindings = append(bindings, b)
		}
	}
	return policies, bindings
}

// members returns the SidecarSets p injects, and those the wanted policy of its name would.
func members(p *admissionregistrationv1.MutatingAdmissionPolicy, want []*admissionregistrationv1.MutatingAdmissionPolicy) []string {
	set := policy.Members(p)
	for _, w := range want {
		if w.Name == p.Name && w != p {
			for name := range policy.Members(w) {
				set[name] = true
			}
		}
	}
	return sortedKeys(set)
}

// servedBy returns, by policy name, the SidecarSets the plan gives it.
func servedBy(results map[string]policy.Result) map[string][]string {
	out := map[string][]string{}
	for _, name := range sortedKeys(results) {
		if p := results[name].PolicyName; p != "" {
			out[p] = append(out[p], name)
		}
	}
	return out
}

func policySpec(p *admissionregistrationv1.MutatingAdmissionPolicy) any         { return p.Spec }
func bindingSpec(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) any { return b.Spec }

// diff returns the writes that make have (the owned objects of kind k) want: creates of the
// missing, updates of those that differ (sameObject), deletes of those nobody wants. A write holds
// the SidecarSets served by the policy of its name. needs, when set, names the policy a wanted
// object's writes wait for: it is written only if that policy's write succeeds, and an existing
// one is deleted if it fails (a binding must not bind another owner's policy of that name).
func diff[T metav1.Object](k Kind, want []T, have map[string]T, served map[string][]string, needs func(T) string, spec func(T) any) []Write {
	var writes, deletes []Write
	wanted := map[string]bool{}
	for _, w := range want {
		name := w.GetName()
		wanted[name] = true
		var cond *Condition
		if needs != nil {
			if p := needs(w); p != "" {
				cond = &Condition{Key: Key(Policy, p)}
			}
		}
		old, ok := have[name]
		switch {
		case !ok:
			writes = append(writes, Write{Op: Create, Kind: k, Name: name, Object: w, If: cond, Holds: served[name], Reason: "missing"})
		case !sameObject(old, w, spec(old), spec(w)):
			update := copyWith(w, old.GetResourceVersion())
			writes = append(writes, Write{Op: Update, Kind: k, Name: name, Object: update, If: cond, Holds: served[name], Reason: "differs from the plan"})
		}
		if ok && cond != nil {
			deletes = append(deletes, Write{Op: Delete, Kind: k, Name: name, If: &Condition{Key: cond.Key, Failed: true}, Holds: served[name],
				Reason: "its policy " + cond.Key + " could not be written"})
		}
	}
	for _, name := range sortedKeys(have) {
		if !wanted[name] {
			deletes = append(deletes, Write{Op: Delete, Kind: k, Name: name, Holds: served[name], Reason: "not planned"})
		}
	}
	sort.SliceStable(writes, func(i, j int) bool { return writes[i].Name < writes[j].Name })
	sort.SliceStable(deletes, func(i, j int) bool { return deletes[i].Name < deletes[j].Name })
	return append(writes, deletes...)
}

// copyWith returns a copy of o with resourceVersion rv.
func copyWith[T metav1.Object](o T, rv string) T {
	var out metav1.Object
	switch o := any(o).(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		c := o.DeepCopy()
		c.ResourceVersion = rv
		out = c
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		c := o.DeepCopy()
		c.ResourceVersion = rv
		out = c
	default:
		panic(fmt.Sprintf("plan: no copy for %T", o))
	}
	return out.(T)
}

// webhookWrites returns the writes of the webhook configurations: the template's, when it holds
// webhooks an earlier version expanded into it (webhookconfig.TemplateWebhooks), then the active one's,
// when it is missing or differs from matches, then the intake's, when holds are dropped (see
// planIntake; withdrawing says a policy kube-apiserver runs injects versions the plan withdraws).
// Either of the first two failing holds every SidecarSet (all); the active one is written only if
// the template's write succeeds. The duration, when positive, is when to plan again to remove
// intake webhooks.
func webhookWrites(in Input, matches []webhookconfig.WebhookMatch, all []string, withdrawing bool) ([]Write, time.Duration) {
	if in.Template == nil {
		return nil, 0
	}
	selective := webhookconfig.ExpandWebhooks(in.Template.Webhooks, matches, in.ExcludedNamespaces)
	out, recheck := activeWrites(in, slices.Clip(selective), all, withdrawing)
	if in.Intake == nil {
		// Created without webhooks, so that it is there to annotate after an install
		// (docs/managed-clusters.md) and owned from the start; a replica creates it too when
		// it opens the intake first.
		return append(out, Write{Op: Create, Kind: Webhooks, Name: IntakeWebhooks(in.Template.Name), Object: owned(in, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: IntakeWebhooks(in.Template.Name)}}), Reason: "missing"}), recheck
	}
	w, intakeRecheck := intakeWrite(in, selective, withdrawing)
	if intakeRecheck > 0 && (recheck <= 0 || intakeRecheck < recheck) {
		recheck = intakeRecheck
	}
	if w != nil {
		out = append(out, *w)
	}
	return out, recheck
}

// intakeWrite returns the write of the intake configuration that drops the holds past (planIntake)
// and keeps it owned like the active one, nil when it is as it should be, and when to plan again.
// Its failure holds no SidecarSet: the holds are dropped on a later pass.
func intakeWrite(in Input, selective []admissionregistrationv1.MutatingWebhook, withdrawing bool) (*Write, time.Duration) {
	intake := planIntake(in, in.Intake, selective, withdrawing)
	update := owned(in, in.Intake.DeepCopy())
	if intake.state != nil {
		update.Webhooks = intake.webhooks
		intake.state.Annotate(&update.ObjectMeta)
	}
	if equality.Semantic.DeepEqual(in.Intake.Webhooks, update.Webhooks) && equality.Semantic.DeepEqual(in.Intake.Annotations, update.Annotations) &&
		sameObject(in.Intake, update, nil, nil) {
		return nil, intake.recheck
	}
	reason := "differs from the plan"
	if intake.reason != "" {
		reason = intake.reason
	}
	return &Write{Op: Update, Kind: Webhooks, Name: update.Name, Object: update, Reason: reason}, intake.recheck
}

// owned returns cfg labelled as the server's and owned by in.Owner, when set.
func owned(in Input, cfg *admissionregistrationv1.MutatingWebhookConfiguration) *admissionregistrationv1.MutatingWebhookConfiguration {
	if in.Owner != nil {
		cfg.OwnerReferences = []metav1.OwnerReference{*in.Owner}
	}
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	cfg.Labels[apps.ManagedByLabel] = apps.ManagedByValue
	return cfg
}

// activeWrites returns the writes of the template and the active configuration, whose webhooks
// are selective (expanded once per pass by webhookWrites); intake webhooks an earlier version
// added to the active configuration are dropped with their holds (planIntake).
func activeWrites(in Input, selective []admissionregistrationv1.MutatingWebhook, all []string, withdrawing bool) ([]Write, time.Duration) {
	tmpl := in.Template
	var out []Write
	var cond *Condition
	if kept := webhookconfig.TemplateWebhooks(tmpl.Webhooks); len(kept) != len(tmpl.Webhooks) {
		update := tmpl.DeepCopy()
		update.Webhooks = kept
		out = append(out, Write{Op: Update, Kind: Webhooks, Name: tmpl.Name, Object: update, Holds: all,
			Reason: "the template holds webhooks an earlier version expanded into it"})
		cond = &Condition{Key: Key(Webhooks, tmpl.Name)}
	}
	want := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
		Name:   ActiveWebhooks(tmpl.Name),
		Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue},
	}, Webhooks: selective}
	if in.Version != "" {
		want.Annotations = map[string]string{apps.ServerVersionAnnotation: in.Version}
	}
	if in.Owner != nil {
		want.OwnerReferences = []metav1.OwnerReference{*in.Owner}
	}
	have := in.Active
	if have == nil {
		return append(out, Write{Op: Create, Kind: Webhooks, Name: want.Name, Object: want, If: cond, Holds: all, Reason: "missing"}), 0
	}
	intake := planIntake(in, have, want.Webhooks, withdrawing)
	update := have.DeepCopy()
	update.Webhooks, update.OwnerReferences = append(want.Webhooks, intake.webhooks...), want.OwnerReferences
	if update.Labels == nil {
		update.Labels = map[string]string{}
	}
	update.Labels[apps.ManagedByLabel] = apps.ManagedByValue
	for k, v := range want.Annotations {
		metav1.SetMetaDataAnnotation(&update.ObjectMeta, k, v)
	}
	if intake.state != nil {
		intake.state.Annotate(&update.ObjectMeta)
	}
	if equality.Semantic.DeepEqual(have.Webhooks, update.Webhooks) && equality.Semantic.DeepEqual(have.Annotations, update.Annotations) &&
		sameObject(have, update, nil, nil) {
		return out, intake.recheck
	}
	reason := "differs from the plan"
	if intake.reason != "" {
		reason = intake.reason
	}
	return append(out, Write{Op: Update, Kind: Webhooks, Name: want.Name, Object: update, If: cond, Holds: all, Reason: reason}), intake.recheck
}

// intakePlan is what a configuration keeps of the intake.
type intakePlan struct {
	// webhooks are the intake webhooks kept.
	webhooks []admissionregistrationv1.MutatingWebhook
	// state, when set, is recorded in the annotations (holds dropped); nil leaves them as they are.
	state *IntakeState
	// recheck, when positive, is when a hold may be dropped.
	recheck time.Duration
	// reason says why holds are dropped.
	reason string
}

// planIntake decides what holder, the intake configuration (or the active one, where an earlier
// version added them), keeps of the intake webhooks a replica added before a SidecarSet write (see
// IntakeState): nothing is dropped while the selective webhooks of the active configuration differ
// from selective (they are written now, and not loaded before LoadDelay) nor until they
// have been as they are for LoadDelay, nor while withdrawing: a policy that stops injecting a
// SidecarSet (deleted, or moved to another policy or the webhook) waits for the webhooks that
// take it over, and kube-apiserver runs it meanwhile, injecting the version before into pods that
// version alone selects, which the selective webhooks do not send and the webhook takes it out
// of. Then each hold whose time, plus LoadDelay, has passed (a write admitted before it may still
// be reaching the informer) is dropped, the cluster hold and each namespace's apart, and the
// intake webhooks are rewritten for the holds left (none: removed with their annotations).
func planIntake(in Input, holder *admissionregistrationv1.MutatingWebhookConfiguration, selective []admissionregistrationv1.MutatingWebhook, withdrawing bool) intakePlan {
	_, open := webhookconfig.SplitIntake(holder.Webhooks)
	if len(open) == 0 {
		return intakePlan{}
	}
	kept := intakePlan{webhooks: open}
	if in.Active == nil {
		kept.recheck = in.LoadDelay + time.Millisecond
		return kept
	}
	if have, _ := webhookconfig.SplitIntake(in.Active.Webhooks); !equality.Semantic.DeepEqual(have, selective) {
		kept.recheck = in.LoadDelay + time.Millisecond
		return kept
	}
	if wait := since(in, SelectiveWebhooksKey(in.Active.Name)).Add(in.LoadDelay).Sub(in.Now); wait > 0 {
		kept.recheck = wait
		return kept
	}
	if withdrawing {
		return kept // planned again when the withdrawal is written
	}
	state := ReadIntake(holder, in.Template.Webhooks, in.ExcludedNamespaces)
	left, next := state.Expire(in.Now, in.LoadDelay)
	if !state.Empty() && left.holds() == state.holds() {
		kept.recheck = next
		return kept
	}
	if left.Stale {
		left = left.openedAt(in.Now)
	}
	reason := "the selective webhooks serve every SidecarSet written while the intake was open"
	if !left.Empty() {
		reason = "the selective webhooks serve every SidecarSet written in the intake holds that have passed"
	}
	return intakePlan{webhooks: left.Webhooks(in.Template.Webhooks, in.ExcludedNamespaces), state: &left, recheck: next, reason: reason}
}

// ActiveWebhooks names the configuration of the injection webhooks the sync writes, from the
// shipped one, template.
func ActiveWebhooks(template string) string { return template + "-active" }

// IntakeWebhooks names the configuration of the intake webhooks (see IntakeState), from the
// shipped one, template: apart from the active one, so that a hold, written every few seconds
// while SidecarSets are, writes a few webhooks and not every selective one.
func IntakeWebhooks(template string) string { return template + "-intake" }

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
