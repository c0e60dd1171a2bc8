// Package injectionsync keeps the main cluster's injection objects in step with the SidecarSets:
// the group MutatingAdmissionPolicies and their bindings for policy-path SidecarSets (package
// admission/policy compiles and plans them), and the injection webhooks' configuration, rendered
// from its shipped template, so that kube-apiserver sends the webhook only the pods it has work
// for. It is a thin adapter: gather (listers) -> plan (pure, package plan, around
// admission/policy.PlanPolicies) -> write (create, update or delete what differs, in the plan's
// order) -> record (what is applied, for Ready). Objects it owns
// carry the label app.kubernetes.io/managed-by=sidecarset-apiserver; owned objects that no
// SidecarSet wants (deleted SidecarSets, ones now served by the webhook) are deleted, and objects
// edited by hand are put back (drift), on every change and at least every resync period.
package injectionsync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/kubernetes"
	admissionlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/contain"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync/plan"
	appsinformers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// key is the controller's only work item: every change replans everything (a plan of 1,000
// SidecarSets takes milliseconds, and neighbours decide each policy).
const key = "policies"

// Options configure the controller.
type Options struct {
	// Kube writes the policies, bindings and the webhook configuration in the main cluster.
	Kube kubernetes.Interface
	// SidecarSets are the server's SidecarSets.
	SidecarSets appsinformers.SidecarSetInformer
	// Policies and Bindings watch the main cluster's objects labelled as owned by this server;
	// nil, with WebhookOnly, where the cluster serves no MutatingAdmissionPolicy.
	Policies admissioninformers.MutatingAdmissionPolicyInformer
	Bindings admissioninformers.MutatingAdmissionPolicyBindingInformer
	// Webhooks watches the main cluster's MutatingWebhookConfigurations (only WebhookConfiguration
	// is written).
	Webhooks admissioninformers.MutatingWebhookConfigurationInformer
	// WebhookConfiguration names the configuration of the injection webhooks (one per class of
	// namespace) whose match condition the controller keeps current; empty leaves them alone.
	WebhookConfiguration string
	// ExcludedNamespaces are never injected by policies (those the webhook configuration excludes).
	ExcludedNamespaces []string
	// SortSidecarContainersByName is the injection option of the same name.
	SortSidecarContainersByName bool
	// MaxPolicyRequests is admission/policy.PlanInput.MaxPolicyRequests.
	MaxPolicyRequests int
	// Resync replans this often even without changes (drift of owned objects is seen at once).
	Resync time.Duration
	// Clock stamps newly compiled policies.
	Clock clock.PassiveClock
	// Grace keeps a policy compiled anew in the webhook's match condition for this long
	// (admission/policy.PlanInput.Grace).
	Grace time.Duration
	// LoadDelay is how long kube-apiserver may take to load a write of the webhook configuration
	// (plan.Input.LoadDelay).
	LoadDelay time.Duration
	// WebhookOnly turns policy injection off: owned policies and bindings are deleted and the
	// webhook's match condition selects the pods of every SidecarSet.
	WebhookOnly bool
	// Owner, when set, returns the owner reference every policy and binding carries (read on each
	// reconcile: the owner may be re-created), so that the garbage collector deletes them with it.
	Owner func(context.Context) (*metav1.OwnerReference, error)
	// Version is this server's version, recorded on the active webhook configuration
	// (apps.ServerVersionAnnotation); empty records none.
	Version string
}

// Controller reconciles policy injection.
type Controller struct {
	opts Options
	// tracker knows since when each owned object has been as it is (Reconcile runs one at a time).
	tracker plan.Tracker

	appliedMu sync.Mutex
	state     plan.State               // what is applied, and what settles until when
	notReady  map[string]bool          // the SidecarSets not ready after the last pass
	widened   map[string]apps.Widening // SidecarSet name -> why it leaves the webhooks without a label selector
	results   map[string]policy.Result // SidecarSet name -> the path the last plan gave it; nil between terms
	planned   bool                     // a plan of this term was recorded
	sets      appslisters.SidecarSetLister
	policies  admissionlisters.MutatingAdmissionPolicyLister
	bindings  admissionlisters.MutatingAdmissionPolicyBindingLister
	webhooks  admissionlisters.MutatingWebhookConfigurationLister
	synced    []cache.InformerSynced

	queueMu sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[string] // the current term's; nil between terms

	memo policy.Memo // what the last plan compiled, for the next (Reconcile runs one at a time)
	pace pacer       // spaces out the reconciles events ask for (pace.go)
	// budget spaces out the policy writes that only add SidecarSets (pace.go)
	budget writeBudget

	onChange func(names ...string) // see OnChange
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	registerMetrics()
	c := &Controller{
		opts:     opts,
		sets:     opts.SidecarSets.Lister(),
		policies: noPolicies{},
		bindings: noBindings{},
		webhooks: opts.Webhooks.Lister(),
	}
	c.pace.clock = opts.Clock
	c.budget.clock = opts.Clock
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.addAfter(c.pace.delay()) },
		UpdateFunc: func(any, any) { c.addAfter(c.pace.delay()) },
		DeleteFunc: func(any) { c.addAfter(c.pace.delay()) },
	}
	informers := []cache.SharedIndexInformer{opts.SidecarSets.Informer(), opts.Webhooks.Informer()}
	if opts.Policies != nil && opts.Bindings != nil {
		c.policies, c.bindings = opts.Policies.Lister(), opts.Bindings.Lister()
		informers = append(informers, opts.Policies.Informer(), opts.Bindings.Informer())
	} else if !opts.WebhookOnly {
		return nil, errors.New("policy injection needs the policy and binding informers")
	}
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(enqueue); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

// Run reconciles until ctx ends: one term, as leader. The informers must be started by the
// caller. Each term has its own queue, so Run may be called again for a later term.
func (c *Controller) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	retries := workqueue.DefaultTypedControllerRateLimiter[string]()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(retries,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "sidecarset-policies"})
	c.queueMu.Lock()
	c.queue = q
	c.queueMu.Unlock()
	defer func() {
		c.queueMu.Lock()
		if c.queue == q {
			c.queue = nil
		}
		c.queueMu.Unlock()
		q.ShutDown()
		c.appliedMu.Lock()
		c.results, c.widened, c.planned = nil, nil, false // another replica plans now
		c.appliedMu.Unlock()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	klog.InfoS("starting the policy injection controller")
	q.Add(key)
	if c.opts.Resync > 0 {
		go wait.UntilWithContext(ctx, func(context.Context) { q.Add(key) }, c.opts.Resync)
	}
	go func() { <-ctx.Done(); q.ShutDown() }()
	for c.processNext(ctx, q, retries) {
	}
}

// addAfter queues a reconcile in the current term after d; between terms it does nothing (a
// term starts with a reconcile).
func (c *Controller) addAfter(d time.Duration) {
	c.queueMu.Lock()
	q := c.queue
	c.queueMu.Unlock()
	if q != nil {
		q.AddAfter(key, d)
	}
}

// processNext reconciles once, unless the pace asks to wait (a plan's own recheck, a write's
// budget, a settling SidecarSet or a term's resync come at their own times): then it queues the
// reconcile for when the pace allows. A failed reconcile is tried again after the retries'
// backoff, and no sooner than the pace allows (retryDelay).
func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], retries workqueue.TypedRateLimiter[string]) bool {
	k, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(k)
	if d := c.pace.delay(); d > 0 {
		q.AddAfter(k, d)
		return true
	}
	if err := contain.Run("policy-reconcile", func() error { return c.Reconcile(ctx) }); err != nil {
		klog.ErrorS(err, "reconciling injection policies")
		q.AddAfter(k, c.retryDelay(retries.When(k)))
		return true
	}
	q.Forget(k)
	return true
}

// retryDelay is how long a failed reconcile waits to be tried again: backoff, or longer while the
// pace asks for it.
func (c *Controller) retryDelay(backoff time.Duration) time.Duration {
	return max(backoff, c.pace.delay())
}

// Reconcile gathers what policy injection needs from the listers, plans it (package plan), writes
// what differs, and records what is applied.
func (c *Controller) Reconcile(ctx context.Context) error {
	in, err := c.gather(ctx)
	if err != nil {
		return err
	}
	var res plan.Result
	start := c.opts.Clock.Now()
	if err := c.pace.run(func() (err error) { res, err = plan.Sync(in); return err }); err != nil {
		return err
	}
	klog.V(3).InfoS("planned injection", "sidecarsets", len(in.SidecarSets), "writes", len(res.Writes), "took", c.opts.Clock.Since(start))
	if res.RecheckAfter > 0 {
		c.addAfter(res.RecheckAfter)
	}
	widened := 0.0
	if res.SelectsEveryPod() {
		widened = 1
	}
	everyPod.Set(widened)
	if len(res.Withdrawing) > 0 {
		klog.V(2).InfoS("policies that stop injecting SidecarSets wait for the webhooks that take them over", "policies", res.Withdrawing, "wait", res.WithdrawAfter)
	}
	// Each object is written on its own: one that kube-apiserver refuses holds back only the
	// SidecarSets it serves, whose pods the webhook keeps injecting.
	failed, err := c.write(ctx, res.Writes)
	c.record(res, failed)
	return err
}

// gather reads everything the plan needs: the stored SidecarSets, the owned objects as the
// informers show them, since when each has been so, and the owner.
func (c *Controller) gather(ctx context.Context) (plan.Input, error) {
	in := plan.Input{Now: c.opts.Clock.Now(), Grace: c.opts.Grace, LoadDelay: c.opts.LoadDelay, ExcludedNamespaces: c.opts.ExcludedNamespaces, Memo: &c.memo,
		SortSidecarContainersByName: c.opts.SortSidecarContainersByName, WebhookOnly: c.opts.WebhookOnly, Version: c.opts.Version,
		MaxPolicyRequests: c.opts.MaxPolicyRequests}
	var err error
	if in.SidecarSets, err = c.sets.List(labels.Everything()); err != nil {
		return in, err
	}
	if in.Policies, err = c.policies.List(ownedSelector); err != nil {
		return in, err
	}
	if in.Bindings, err = c.bindings.List(ownedSelector); err != nil {
		return in, err
	}
	if in.Template, in.Active, in.Intake, err = c.webhookConfigurations(); err != nil {
		return in, err
	}
	if in.Owner, err = c.owner(ctx); err != nil {
		return in, err
	}
	in.Since = c.tracker.Observe(in.Now, plan.Observations(in.Now, in.Policies, in.Bindings, in.Active))
	return in, nil
}

// webhookConfigurations returns the template of the injection webhooks and the active and intake
// configurations rendered from it, each nil when missing (none without a template name).
func (c *Controller) webhookConfigurations() (tmpl, active, intake *admissionregistrationv1.MutatingWebhookConfiguration, err error) {
	if c.opts.WebhookConfiguration == "" {
		return nil, nil, nil, nil
	}
	if tmpl, err = c.webhooks.Get(c.opts.WebhookConfiguration); apierrors.IsNotFound(err) {
		tmpl, err = nil, nil // nothing to render; a template created later is an event
	}
	if err != nil {
		return nil, nil, nil, err
	}
	if active, err = c.optional(ActiveWebhooks(c.opts.WebhookConfiguration)); err != nil {
		return nil, nil, nil, err
	}
	if intake, err = c.optional(IntakeWebhooks(c.opts.WebhookConfiguration)); err != nil {
		return nil, nil, nil, err
	}
	return tmpl, active, intake, nil
}

// optional returns the webhook configuration name from the cache, nil when missing.
func (c *Controller) optional(name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	cfg, err := c.webhooks.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return cfg, err
}

// owner returns the owner reference of the objects written: an error when the owner is gone
// (being uninstalled, or not registered yet: objects written now would outlive it), none when it
// cannot be read (injection matters more than its clean-up).
func (c *Controller) owner(ctx context.Context) (*metav1.OwnerReference, error) {
	if c.opts.Owner == nil {
		return nil, nil
	}
	owner, err := c.opts.Owner(ctx)
	switch {
	case apierrors.IsNotFound(err):
		return nil, err
	case err != nil:
		klog.ErrorS(err, "the injection objects are written without an owner; they will outlive the server's deletion")
		return nil, nil
	}
	return owner, nil
}

// record keeps what the pass applied: the paths and widenings it planned, the generations
// applied but for held SidecarSets, and what settles.
func (c *Controller) record(res plan.Result, failed map[string]bool) {
	changed := c.apply(res, failed)
	if c.onChange != nil && len(changed) > 0 {
		c.onChange(changed...)
	}
}

// apply keeps what the pass applied (see record) and returns the SidecarSets whose path or
// widening changed, or that became ready (Ready: their status may now record their generation).
// A pass runs when the next SidecarSet settles, so that it is told too.
func (c *Controller) apply(res plan.Result, failed map[string]bool) []string {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	now := c.opts.Clock.Now()
	changed := changedResults(c.results, res.Results, c.widened, res.Widened)
	c.widened, c.results, c.planned = res.Widened, res.Results, true
	c.state = res.Next(c.state, failed, now)
	notReady := res.NotReady(c.state, now)
	told := sets.New(changed...)
	for name := range c.notReady {
		if !notReady[name] {
			told.Insert(name)
		}
	}
	c.notReady = notReady
	if at := c.state.SettledAt(now); !at.IsZero() {
		c.addAfter(at.Sub(now))
	}
	if len(res.Settling) > 0 {
		names := make([]string, 0, len(res.Settling))
		for name := range res.Settling {
			names = append(names, name)
		}
		sort.Strings(names)
		klog.V(2).InfoS("previous policies replaced: their SidecarSets settle after the grace period", "sidecarsets", names, "grace", c.opts.Grace)
	}
	return sets.List(told)
}

// changedResults returns the SidecarSets whose path or widening the plan changed (all of them
// on a term's first plan), sorted.
func changedResults(before, after map[string]policy.Result, wideBefore, wideAfter map[string]apps.Widening) []string {
	var out []string
	for name, r := range after {
		old, ok := before[name]
		w, wok := wideBefore[name]
		nw, nwok := wideAfter[name]
		if !ok || old != r || wok != nwok || w != nw {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// OnChange has fn called with the SidecarSets whose path or widening a plan changed, so that
// their Injected and widening conditions are written again although nothing of theirs changed
// (a cluster SidecarSet written beside a NamespacedSidecarSet shadows it, a neighbour comes or
// goes). Set it before Run.
func (c *Controller) OnChange(fn func(names ...string)) { c.onChange = fn }

// Ready reports whether the injection objects for ss's generation are applied and in effect: pods
// created from now on are injected with it, by its policy or by the webhook, and no longer by a
// policy it had before (see policy.Replaced).
func (c *Controller) Ready(ss *v1alpha1.SidecarSet) bool {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	return c.state.Ready(ss.Name, ss.Generation, c.opts.Clock.Now())
}

// Planned reports whether a plan of this term was recorded: it named every SidecarSet to
// OnChange's function.
func (c *Controller) Planned() bool {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	return c.planned
}

// Injection returns the path the last plan of this term gave the named SidecarSet (false before
// the first plan, between terms, and for a SidecarSet it did not plan): the one answer for its
// Injected condition and its /rollout view.
func (c *Controller) Injection(name string) (*v1alpha1.RolloutInjection, bool) {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	r, ok := c.results[name]
	if !ok {
		return nil, false
	}
	return r.Injection(), true
}

// Widened reports whether the named SidecarSet leaves the injection webhooks without a label
// selector, as the last plan found, and why.
func (c *Controller) Widened(name string) (apps.Widening, bool) {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	w, ok := c.widened[name]
	return w, ok
}

// noPolicies and noBindings list nothing: a cluster that serves no MutatingAdmissionPolicy has
// none, and the controller keeps only the webhooks current.
type noPolicies struct {
	admissionlisters.MutatingAdmissionPolicyLister
}

func (noPolicies) List(labels.Selector) ([]*admissionregistrationv1.MutatingAdmissionPolicy, error) {
	return nil, nil
}

type noBindings struct {
	admissionlisters.MutatingAdmissionPolicyBindingLister
}

func (noBindings) List(labels.Selector) ([]*admissionregistrationv1.MutatingAdmissionPolicyBinding, error) {
	return nil, nil
}

var ownedSelector = labels.SelectorFromSet(labels.Set{apps.ManagedByLabel: apps.ManagedByValue})

// ActiveWebhooks names the configuration of the injection webhooks this server writes, from the
// shipped one, template (see plan.ActiveWebhooks).
func ActiveWebhooks(template string) string { return plan.ActiveWebhooks(template) }

// IntakeWebhooks names the configuration of the intake webhooks, from the shipped one, template
// (see plan.IntakeWebhooks).
func IntakeWebhooks(template string) string { return plan.IntakeWebhooks(template) }

// writers is how many writes run at once (a plan may create a thousand bindings), policyWriters
// how many policy writes: kube-apiserver compiles each policy it admits, a fraction of a second of
// CPU, so more at once only make each wait longer (and time out on a small control plane).
const (
	writers       = 8
	policyWriters = 2
)

// write does the writes in order: a run of writes of one kind, none depending on another of the
// run, writers at a time, each on its own (one that fails holds back no other); a write whose
// condition does not hold is skipped. It returns the keys of the writes that failed, and their
// errors joined.
func (c *Controller) write(ctx context.Context, writes []plan.Write) (map[string]bool, error) {
	failed, notDone := map[string]bool{}, map[string]bool{}
	var errs []error
	var deferred time.Time // when the first policy update that waits may go
	for len(writes) > 0 {
		n := 1
		for n < len(writes) && writes[n].Kind == writes[0].Kind && (writes[n].If == nil || !inBatch(writes[:n], writes[n].If.Key)) {
			n++
		}
		batch, results := writes[:n], make([]result, n)
		writes = writes[n:]
		var wg sync.WaitGroup
		next := make(chan int)
		workers := writers
		if batch[0].Kind == plan.Policy {
			workers = policyWriters
		}
		for i := 0; i < workers; i++ {
			wg.Go(func() {
				for j := range next {
					start := c.opts.Clock.Now()
					results[j] = c.do(ctx, batch[j])
					if w := batch[j]; w.Kind == plan.Policy && results[j].err == nil {
						c.budget.spent(w.Name, start, w.Op == plan.Delete)
					}
				}
			})
		}
		for j, w := range batch {
			if !w.If.Holds(notDone) {
				results[j].skipped = true
				continue
			}
			if w.Adds {
				if d := c.budget.wait(w.Name); d > 0 {
					results[j].skipped, deferred = true, soonest(deferred, c.opts.Clock.Now().Add(d))
					failed[w.Key()] = true // its SidecarSets are held until it is written
					continue
				}
			}
			next <- j
		}
		close(next)
		wg.Wait()
		for j, w := range batch {
			if err := c.recordWrite(w, results[j]); err != nil {
				errs = append(errs, err)
				failed[w.Key()] = true
			}
			notDone[w.Key()] = results[j].skipped || results[j].err != nil
		}
	}
	if !deferred.IsZero() {
		c.addAfter(deferred.Sub(c.opts.Clock.Now()))
	}
	return failed, errors.Join(errs...)
}

// soonest returns the earlier of a and b, the one set when the other is zero.
func soonest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func inBatch(batch []plan.Write, key string) bool {
	for _, w := range batch {
		if w.Key() == key {
			return true
		}
	}
	return false
}

// result is one write's outcome.
type result struct {
	written metav1.Object
	err     error
	skipped bool
}

// recordWrite logs and counts one write's outcome, and tells the tracker of the active webhooks
// written; it returns the write's error.
func (c *Controller) recordWrite(w plan.Write, r result) error {
	switch {
	case r.skipped:
		return nil
	case r.err != nil:
		writeErrors.WithLabelValues(string(w.Kind)).Inc()
		if w.Kind == plan.Webhooks {
			c.tracker.Forget(w.Key())
		} else {
			klog.ErrorS(r.err, "an injection object was not written; the webhook injects its SidecarSets meanwhile", "kind", w.Kind, "name", w.Name)
		}
		return r.err
	case w.Kind == plan.Webhooks && w.Name != c.opts.WebhookConfiguration:
		c.tracker.Wrote(w.Key(), r.written.GetResourceVersion(), c.opts.Clock.Now())
		klog.V(2).InfoS("wrote the injection webhooks", "configuration", w.Name, "template", c.opts.WebhookConfiguration, "reason", w.Reason)
	case w.Kind != plan.Webhooks:
		klog.V(2).InfoS(strings.ToLower(string(w.Op))+"d", "kind", w.Kind, "name", w.Name, "reason", w.Reason)
	}
	return nil
}

// do sends one write to kube-apiserver.
func (c *Controller) do(ctx context.Context, w plan.Write) result {
	ar := c.opts.Kube.AdmissionregistrationV1()
	var r result
	switch w.Kind {
	case plan.Policy:
		r.written, r.err = send(ctx, ar.MutatingAdmissionPolicies(), w)
	case plan.Binding:
		r.written, r.err = send(ctx, ar.MutatingAdmissionPolicyBindings(), w)
	case plan.Webhooks:
		r.written, r.err = send(ctx, ar.MutatingWebhookConfigurations(), w)
	default:
		r.err = fmt.Errorf("no writer for %s", w.Kind)
	}
	switch {
	case r.err == nil:
	case w.Kind == plan.Webhooks && w.Name == c.opts.WebhookConfiguration:
		r.err = fmt.Errorf("removing expanded webhooks from the template %s: %w", w.Name, r.err)
	case w.Kind == plan.Webhooks:
		r.err = fmt.Errorf("writing the injection webhooks %s: %w", w.Name, r.err)
	default:
		r.err = fmt.Errorf("%s %s %s: %w", strings.TrimSuffix(strings.ToLower(string(w.Op)), "e")+"ing", w.Kind, w.Name, r.err)
	}
	return r
}

// client is what send needs of a typed client of kind T.
type client[T metav1.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
	Get(context.Context, string, metav1.GetOptions) (T, error)
}

// send does w with cl. A create whose name exists succeeds when the object is this server's
// (written by an earlier pass the cache does not show yet), but for the webhooks, whose next pass
// updates it; a delete of a missing object succeeds.
func send[T metav1.Object](ctx context.Context, cl client[T], w plan.Write) (metav1.Object, error) {
	switch w.Op {
	case plan.Create:
		written, err := cl.Create(ctx, w.Object.(T), metav1.CreateOptions{})
		switch {
		case !apierrors.IsAlreadyExists(err):
		case w.Kind == plan.Webhooks:
			err = fmt.Errorf("%s exists but is not in the cache yet", w.Name)
		default:
			var existing T
			if existing, err = cl.Get(ctx, w.Name, metav1.GetOptions{}); err == nil && existing.GetLabels()[apps.ManagedByLabel] != apps.ManagedByValue {
				err = fmt.Errorf("the name is taken by an object this server does not own (no label %s=%s)", apps.ManagedByLabel, apps.ManagedByValue)
			}
			return existing, err
		}
		return written, err
	case plan.Update:
		return cl.Update(ctx, w.Object.(T), metav1.UpdateOptions{})
	}
	if err := cl.Delete(ctx, w.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	return nil, nil
}
