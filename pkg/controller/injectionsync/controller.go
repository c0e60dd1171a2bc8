// Package injectionsync keeps the main cluster's injection objects in step with the SidecarSets:
// the group MutatingAdmissionPolicies and their bindings for policy-path SidecarSets (package
// admission/policy compiles and plans them), and the injection webhooks' configuration, rendered
// from its shipped template, so that kube-apiserver sends the webhook only the pods it has work
// for. It is a thin adapter: gather (listers) -> plan (pure,
// admission/policy.PlanPolicies) -> apply (create, update or delete what differs). Objects it owns
// carry the label app.kubernetes.io/managed-by=sidecarset-apiserver; owned objects that no
// SidecarSet wants (deleted SidecarSets, ones now served by the webhook) are deleted, and objects
// edited by hand are put back (drift), on every change and at least every resync period.
package injectionsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/contain"
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
	// Resync replans this often even without changes (drift of owned objects is seen at once).
	Resync time.Duration
	// Clock stamps newly compiled policies.
	Clock clock.PassiveClock
	// Grace keeps a policy compiled anew in the webhook's match condition for this long
	// (admission/policy.PlanInput.Grace).
	Grace time.Duration
	// WebhookOnly turns policy injection off: owned policies and bindings are deleted and the
	// webhook's match condition selects the pods of every SidecarSet.
	WebhookOnly bool
	// Owner, when set, returns the owner reference every policy and binding carries (read on each
	// reconcile: the owner may be re-created), so that the garbage collector deletes them with it.
	Owner func(context.Context) (*metav1.OwnerReference, error)
	// Version is this server's version, recorded on the active webhook configuration
	// (policy.ServerVersionAnnotation); empty records none.
	Version string
}

// Controller reconciles policy injection.
type Controller struct {
	opts Options
	// seen is, by policy name, the first sight of its current resourceVersion; nil until the
	// first reconcile.
	seen map[string]seen
	// webhooksSeen is when the webhook configuration was first seen, or written, at its current
	// resourceVersion.
	webhooksSeen seen

	appliedMu sync.Mutex
	applied   map[string]int64           // SidecarSet name -> generation whose injection objects are applied
	widened   map[string]policy.Widening // SidecarSet name -> why it leaves the webhooks without a label selector
	results   map[string]policy.Result   // SidecarSet name -> the path the last plan gave it; nil between terms
	settling  map[string]time.Time       // SidecarSet name -> until when kube-apiserver may still run its previous policy
	sets      appslisters.SidecarSetLister
	policies  admissionlisters.MutatingAdmissionPolicyLister
	bindings  admissionlisters.MutatingAdmissionPolicyBindingLister
	webhooks  admissionlisters.MutatingWebhookConfigurationLister
	synced    []cache.InformerSynced

	queueMu sync.Mutex
	queue   workqueue.TypedRateLimitingInterface[string] // the current term's; nil between terms

	memo policy.Memo // what the last plan compiled, for the next (Reconcile runs one at a time)
}

// seen is when the controller first saw a policy at a resourceVersion.
type seen struct {
	resourceVersion string
	at              time.Time
}

// New returns a controller; Run starts it.
func New(opts Options) (*Controller, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	registerMetrics()
	c := &Controller{
		opts:     opts,
		applied:  map[string]int64{},
		settling: map[string]time.Time{},
		sets:     opts.SidecarSets.Lister(),
		policies: noPolicies{},
		bindings: noBindings{},
		webhooks: opts.Webhooks.Lister(),
	}
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.addAfter(0) },
		UpdateFunc: func(any, any) { c.addAfter(0) },
		DeleteFunc: func(any) { c.addAfter(0) },
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
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
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
		c.results, c.widened = nil, nil // another replica plans now
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
	for c.processNext(ctx, q) {
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

func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string]) bool {
	k, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(k)
	if err := contain.Run("policy-reconcile", func() error { return c.Reconcile(ctx) }); err != nil {
		klog.ErrorS(err, "reconciling injection policies")
		q.AddRateLimited(k)
		return true
	}
	q.Forget(k)
	return true
}

// Reconcile plans policy injection from the listers and applies the difference.
func (c *Controller) Reconcile(ctx context.Context) error {
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return err
	}
	owned, err := c.policies.List(ownedSelector)
	if err != nil {
		return err
	}
	compiled := make(map[string]*admissionregistrationv1.MutatingAdmissionPolicy, len(owned))
	for _, p := range owned {
		compiled[p.Name] = p
	}
	ownedBindings, err := c.bindings.List(ownedSelector)
	if err != nil {
		return err
	}
	bindings := make(map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding, len(ownedBindings))
	bound := make(map[string]bool, len(ownedBindings))
	for _, b := range ownedBindings {
		bindings[b.Name] = b
		bound[b.Spec.PolicyName] = b.Name == b.Spec.PolicyName && b.Spec.MatchResources == nil
	}
	var owner *metav1.OwnerReference
	if c.opts.Owner != nil {
		switch owner, err = c.opts.Owner(ctx); {
		case apierrors.IsNotFound(err):
			// Being uninstalled (or not registered yet): objects written now would outlive it.
			return err
		case err != nil:
			// Injection matters more than its clean-up: write the objects without the owner.
			klog.ErrorS(err, "the injection objects are written without an owner; they will outlive the server's deletion")
			owner = nil
		}
	}
	plan, err := policy.PlanPolicies(policy.PlanInput{SidecarSets: sets, Compiled: compiled, Bound: bound, Owner: owner, Loaded: c.loaded(owned, ownedBindings), ExcludedNamespaces: c.opts.ExcludedNamespaces,
		Now: c.opts.Clock.Now(), SortSidecarContainersByName: c.opts.SortSidecarContainersByName, Grace: c.opts.Grace,
		WebhookOnly: c.opts.WebhookOnly, Memo: &c.memo})
	if err != nil {
		return err
	}
	if plan.RecheckAfter > 0 {
		c.addAfter(plan.RecheckAfter)
	}
	widened := 0.0
	for _, m := range plan.WebhookMatches {
		// The webhook of NamespacedSidecarSets' needs selects their namespaces only.
		if m.NamespaceSelector == nil && (m.ObjectSelector == nil || len(m.ObjectSelector.MatchLabels)+len(m.ObjectSelector.MatchExpressions) == 0) {
			widened = 1
		}
	}
	everyPod.Set(widened)
	replaced := policy.Replaced(compiled, plan.Policies)
	// The webhooks first: they select the pods of every SidecarSet whose policy is not in the
	// cluster as planned yet, so that the webhook serves those pods meanwhile; a policy that stops
	// injecting a SidecarSet waits until they have been in place for the grace period. Then
	// policies before bindings: a binding never names a missing policy. Each object is written on its own: one
	// that kube-apiserver refuses holds back only the SidecarSets it serves, whose pods the webhook
	// keeps injecting (their policy or binding is not in place as planned, see PlanInput.Grace).
	webhooksSince, errWebhooks := c.applyWebhooks(ctx, plan.WebhookMatches, owner)
	held := map[string]bool{}
	wantPolicies, wantBindings := plan.Policies, plan.Bindings
	if wait := c.withdrawWait(webhooksSince, errWebhooks); wait > 0 {
		var kept []string
		wantPolicies, wantBindings, kept = keepWithdrawn(compiled, bindings, wantPolicies, wantBindings)
		for _, name := range kept {
			for _, ss := range members(compiled[name], plan.Policies) {
				held[ss] = true
			}
		}
		if len(kept) > 0 {
			klog.V(2).InfoS("policies that stop injecting SidecarSets wait for the webhooks that take them over", "policies", kept, "wait", wait)
			c.addAfter(wait)
		}
	}
	failedPolicies, errPolicies := c.applyPolicies(ctx, wantPolicies, compiled)
	var bindingsToWrite []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, b := range wantBindings {
		if _, exists := compiled[b.Spec.PolicyName]; exists || failedPolicies[b.Spec.PolicyName] == nil {
			bindingsToWrite = append(bindingsToWrite, b)
		}
	}
	failedBindings, errBindings := c.applyBindings(ctx, bindingsToWrite, bindings)
	for name, r := range plan.Results {
		if errWebhooks != nil || (r.PolicyName != "" && (failedPolicies[r.PolicyName] != nil || failedBindings[r.PolicyName] != nil)) {
			held[name] = true
		}
	}
	c.markApplied(sets, replaced, held, plan)
	for _, kind := range []struct {
		name   string
		failed map[string]error
	}{{"MutatingAdmissionPolicy", failedPolicies}, {"MutatingAdmissionPolicyBinding", failedBindings}} {
		for name, err := range kind.failed {
			writeErrors.WithLabelValues(kind.name).Inc()
			klog.ErrorS(err, "an injection object was not written; the webhook injects its SidecarSets meanwhile", "kind", kind.name, "name", name)
		}
	}
	if errWebhooks != nil {
		writeErrors.WithLabelValues("MutatingWebhookConfiguration").Inc()
	}
	return errors.Join(errWebhooks, errPolicies, errBindings)
}

// markApplied records the generations of sets as applied, but for those held (an object serving
// them was not written: they keep the generation applied before), and that the sets whose
// previous policy was replaced are settled only after the grace period.
func (c *Controller) markApplied(sets []*v1alpha1.SidecarSet, replaced []string, held map[string]bool, plan policy.Plan) {
	now := c.opts.Clock.Now()
	applied := make(map[string]int64, len(sets))
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	c.widened, c.results = plan.Widened, plan.Results
	for _, ss := range sets {
		if !held[ss.Name] {
			applied[ss.Name] = ss.Generation
		} else if g, ok := c.applied[ss.Name]; ok {
			applied[ss.Name] = g
		}
	}
	c.applied = applied
	for name, until := range c.settling {
		if !now.Before(until) {
			delete(c.settling, name)
		}
	}
	for _, name := range replaced {
		c.settling[name] = now.Add(c.opts.Grace)
	}
	if len(replaced) > 0 {
		klog.V(2).InfoS("previous policies replaced: their SidecarSets settle after the grace period", "sidecarsets", replaced, "grace", c.opts.Grace)
	}
}

// Ready reports whether the injection objects for ss's generation are applied and in effect: pods
// created from now on are injected with it, by its policy or by the webhook, and no longer by a
// policy it had before (see policy.Replaced).
func (c *Controller) Ready(ss *v1alpha1.SidecarSet) bool {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	g, ok := c.applied[ss.Name]
	until, settling := c.settling[ss.Name]
	return ok && g >= ss.Generation && (!settling || !c.opts.Clock.Now().Before(until))
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
func (c *Controller) Widened(name string) (policy.Widening, bool) {
	c.appliedMu.Lock()
	defer c.appliedMu.Unlock()
	w, ok := c.widened[name]
	return w, ok
}

// loaded returns, by policy name, since when each owned policy and its binding have been at their
// current resourceVersions, as far as this controller has seen (kube-apiserver loads both
// asynchronously).
func (c *Controller) loaded(owned []*admissionregistrationv1.MutatingAdmissionPolicy, bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) map[string]time.Time {
	now := c.opts.Clock.Now()
	out := make(map[string]time.Time, len(owned))
	current := make(map[string]seen, len(owned)+len(bindings))
	since := func(key string, o metav1.Object) time.Time {
		s, ok := c.seen[key]
		switch {
		case ok && s.resourceVersion == o.GetResourceVersion():
		case !ok && c.seen == nil:
			// This controller's first look (a new leader, a restart): the object is as it was last
			// written, by the previous leader; kube-apiserver has had since then to load it. (Only
			// the first: once this controller has looked, even at nothing, what appears later was
			// written since, perhaps by itself a moment ago.)
			s = seen{resourceVersion: o.GetResourceVersion(), at: lastWrite(o, now)}
		default:
			s = seen{resourceVersion: o.GetResourceVersion(), at: now}
		}
		current[key] = s
		return s.at
	}
	for _, p := range owned {
		out[p.Name] = since(p.Name, p)
	}
	for _, b := range bindings {
		if at := since("binding/"+b.Name, b); at.After(out[b.Spec.PolicyName]) {
			if _, ok := out[b.Spec.PolicyName]; ok {
				out[b.Spec.PolicyName] = at
			}
		}
	}
	c.seen = current
	return out
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

// lastWrite is when o was last written, as its managed fields record (its creation without them),
// rounded up to the next second (both are stored in whole seconds), and not later than now.
func lastWrite(o metav1.Object, now time.Time) time.Time {
	at := o.GetCreationTimestamp().Time
	for _, m := range o.GetManagedFields() {
		if m.Time != nil && m.Time.After(at) {
			at = m.Time.Time
		}
	}
	if at.IsZero() {
		return now
	}
	if at = at.Truncate(time.Second).Add(time.Second); at.After(now) {
		return now
	}
	return at
}

var ownedSelector = labels.SelectorFromSet(labels.Set{policy.ManagedByLabel: policy.ManagedByValue})

// kind is what applying one kind of owned object needs.
type kind[T metav1.Object] struct {
	name   string
	create func(context.Context, T) error
	update func(context.Context, T) error
	delete func(context.Context, string) error
	// copyWith returns a copy of the wanted object carrying the existing one's resourceVersion.
	copyWith func(want T, resourceVersion string) T
	spec     func(T) any
	// get reads the object of that name (to tell our own object, not in the cache yet, from
	// another's that holds the name).
	get func(context.Context, string) (metav1.Object, error)
}

// writers is how many writes apply sends at once (a plan may create a thousand policies).
const writers = 8

// apply creates the wanted objects that are missing, updates those that differ and deletes the
// owned ones nobody wants, writers at a time.
func apply[T metav1.Object](ctx context.Context, k kind[T], want []T, have map[string]T) (map[string]error, error) {
	var writes []write
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.GetName()] = true
		old, ok := have[w.GetName()]
		switch {
		case !ok:
			writes = append(writes, write{w.GetName(), func(ctx context.Context) error {
				err := k.create(ctx, w)
				if apierrors.IsAlreadyExists(err) {
					err = ownedByUs(ctx, k, w.GetName())
				}
				if err != nil {
					return fmt.Errorf("creating %s %s: %w", k.name, w.GetName(), err)
				}
				klog.V(2).InfoS("created", "kind", k.name, "name", w.GetName())
				return nil
			}})
		case !sameObject(old, w, k.spec(old), k.spec(w)):
			update := k.copyWith(w, old.GetResourceVersion())
			writes = append(writes, write{w.GetName(), func(ctx context.Context) error {
				if err := k.update(ctx, update); err != nil {
					return fmt.Errorf("updating %s %s: %w", k.name, w.GetName(), err)
				}
				klog.V(2).InfoS("updated", "kind", k.name, "name", w.GetName())
				return nil
			}})
		}
	}
	for name := range have {
		if !wanted[name] {
			writes = append(writes, write{name, func(ctx context.Context) error {
				if err := k.delete(ctx, name); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting %s %s: %w", k.name, name, err)
				}
				klog.V(2).InfoS("deleted", "kind", k.name, "name", name)
				return nil
			}})
		}
	}
	return run(ctx, writes)
}

// ownedByUs returns nil when the existing object named name is this server's (created by an
// earlier write the cache does not show yet), and an error when another owner holds the name.
func ownedByUs[T metav1.Object](ctx context.Context, k kind[T], name string) error {
	existing, err := k.get(ctx, name)
	if err != nil {
		return err
	}
	if existing.GetLabels()[policy.ManagedByLabel] != policy.ManagedByValue {
		return fmt.Errorf("the name is taken by an object this server does not own (no label %s=%s)", policy.ManagedByLabel, policy.ManagedByValue)
	}
	return nil
}

// write is one object's write.
type write struct {
	name string
	do   func(context.Context) error
}

// run runs the writes, writers at a time, each on its own: one that fails holds back no other. It
// returns the errors by object name, and joined.
func run(ctx context.Context, writes []write) (map[string]error, error) {
	var (
		mu     sync.Mutex
		errs   []error
		failed = map[string]error{}
		wg     sync.WaitGroup
		next   = make(chan write)
	)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range next {
				if err := w.do(ctx); err != nil {
					mu.Lock()
					errs = append(errs, err)
					failed[w.name] = err
					mu.Unlock()
				}
			}
		}()
	}
	for _, w := range writes {
		next <- w
	}
	close(next)
	wg.Wait()
	return failed, errors.Join(errs...)
}

func (c *Controller) applyPolicies(ctx context.Context, want []*admissionregistrationv1.MutatingAdmissionPolicy, have map[string]*admissionregistrationv1.MutatingAdmissionPolicy) (map[string]error, error) {
	client := c.opts.Kube.AdmissionregistrationV1().MutatingAdmissionPolicies()
	return apply(ctx, kind[*admissionregistrationv1.MutatingAdmissionPolicy]{
		name: "MutatingAdmissionPolicy",
		create: func(ctx context.Context, p *admissionregistrationv1.MutatingAdmissionPolicy) error {
			_, err := client.Create(ctx, p, metav1.CreateOptions{})
			return err
		},
		update: func(ctx context.Context, p *admissionregistrationv1.MutatingAdmissionPolicy) error {
			_, err := client.Update(ctx, p, metav1.UpdateOptions{})
			return err
		},
		delete: func(ctx context.Context, name string) error { return client.Delete(ctx, name, metav1.DeleteOptions{}) },
		copyWith: func(p *admissionregistrationv1.MutatingAdmissionPolicy, rv string) *admissionregistrationv1.MutatingAdmissionPolicy {
			p = p.DeepCopy()
			p.ResourceVersion = rv
			return p
		},
		spec: func(p *admissionregistrationv1.MutatingAdmissionPolicy) any { return p.Spec },
		get: func(ctx context.Context, name string) (metav1.Object, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
	}, want, have)
}

func (c *Controller) applyBindings(ctx context.Context, want []*admissionregistrationv1.MutatingAdmissionPolicyBinding, have map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding) (map[string]error, error) {
	client := c.opts.Kube.AdmissionregistrationV1().MutatingAdmissionPolicyBindings()
	return apply(ctx, kind[*admissionregistrationv1.MutatingAdmissionPolicyBinding]{
		name: "MutatingAdmissionPolicyBinding",
		create: func(ctx context.Context, b *admissionregistrationv1.MutatingAdmissionPolicyBinding) error {
			_, err := client.Create(ctx, b, metav1.CreateOptions{})
			return err
		},
		update: func(ctx context.Context, b *admissionregistrationv1.MutatingAdmissionPolicyBinding) error {
			_, err := client.Update(ctx, b, metav1.UpdateOptions{})
			return err
		},
		delete: func(ctx context.Context, name string) error { return client.Delete(ctx, name, metav1.DeleteOptions{}) },
		copyWith: func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding, rv string) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
			b = b.DeepCopy()
			b.ResourceVersion = rv
			return b
		},
		spec: func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) any { return b.Spec },
		get: func(ctx context.Context, name string) (metav1.Object, error) {
			return client.Get(ctx, name, metav1.GetOptions{})
		},
	}, want, have)
}

// sameObject reports whether an existing object already has the wanted labels, annotations and
// spec. Specs are compared as JSON, where an empty and a missing list or map are the same, as
// kube-apiserver stores them (the compiled specs set every field it defaults).
func sameObject(have, want metav1.Object, haveSpec, wantSpec any) bool {
	for k, v := range want.GetLabels() {
		if have.GetLabels()[k] != v {
			return false
		}
	}
	if !equality.Semantic.DeepEqual(have.GetOwnerReferences(), want.GetOwnerReferences()) {
		return false
	}
	for k, v := range want.GetAnnotations() {
		if have.GetAnnotations()[k] != v {
			return false
		}
	}
	a, errA := json.Marshal(haveSpec)
	b, errB := json.Marshal(wantSpec)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// ActiveWebhooks names the configuration of the injection webhooks this server writes, from the
// shipped one, template (see applyWebhooks).
func ActiveWebhooks(template string) string { return template + "-active" }

// applyWebhooks makes the webhooks of the active injection configuration those of matches,
// expanded from the template configuration (policy.ExpandWebhooks). The template is the one
// shipped with the deployment: it selects no pod, and applying it again (kubectl apply, a GitOps
// sync) changes nothing that injects; the active one is this server's alone (labelled, owned by
// owner, created when missing). It returns since when the active webhooks have been as planned, as
// far as this controller has seen: now when it wrote them, else when it first saw them so (on its
// first look, their last write); zero when there is no template.
func (c *Controller) applyWebhooks(ctx context.Context, matches []policy.WebhookMatch, owner *metav1.OwnerReference) (time.Time, error) {
	if c.opts.WebhookConfiguration == "" {
		return time.Time{}, nil
	}
	tmpl, err := c.webhooks.Get(c.opts.WebhookConfiguration)
	if apierrors.IsNotFound(err) {
		return time.Time{}, nil // nothing to render; a template created later is an event
	}
	if err != nil {
		return time.Time{}, err
	}
	if err := c.cleanTemplate(ctx, tmpl); err != nil {
		return time.Time{}, err
	}
	want := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
		Name:   ActiveWebhooks(tmpl.Name),
		Labels: map[string]string{policy.ManagedByLabel: policy.ManagedByValue},
	}, Webhooks: policy.ExpandWebhooks(tmpl.Webhooks, matches, c.opts.ExcludedNamespaces)}
	if c.opts.Version != "" {
		want.Annotations = map[string]string{policy.ServerVersionAnnotation: c.opts.Version}
	}
	if owner != nil {
		want.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	now := c.opts.Clock.Now()
	client := c.opts.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	have, err := c.webhooks.Get(want.Name)
	var written *admissionregistrationv1.MutatingWebhookConfiguration
	switch {
	case apierrors.IsNotFound(err):
		if written, err = client.Create(ctx, want, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			err = fmt.Errorf("%s exists but is not in the cache yet", want.Name) // the next reconcile updates it
		}
	case err != nil:
	case equality.Semantic.DeepEqual(have.Webhooks, want.Webhooks) && sameObject(have, want, nil, nil):
		switch {
		case c.webhooksSeen.resourceVersion == have.ResourceVersion:
		case c.webhooksSeen.resourceVersion == "" && c.seen == nil:
			c.webhooksSeen = seen{resourceVersion: have.ResourceVersion, at: lastWrite(have, now)}
		default:
			c.webhooksSeen = seen{resourceVersion: have.ResourceVersion, at: now}
		}
		return c.webhooksSeen.at, nil
	default:
		update := have.DeepCopy()
		update.Webhooks, update.OwnerReferences = want.Webhooks, want.OwnerReferences
		if update.Labels == nil {
			update.Labels = map[string]string{}
		}
		update.Labels[policy.ManagedByLabel] = policy.ManagedByValue
		for k, v := range want.Annotations {
			metav1.SetMetaDataAnnotation(&update.ObjectMeta, k, v)
		}
		written, err = client.Update(ctx, update, metav1.UpdateOptions{})
	}
	if err != nil {
		c.webhooksSeen = seen{}
		return time.Time{}, fmt.Errorf("writing the injection webhooks %s: %w", want.Name, err)
	}
	c.webhooksSeen = seen{resourceVersion: written.ResourceVersion, at: now}
	klog.V(2).InfoS("wrote the injection webhooks", "configuration", want.Name, "template", tmpl.Name, "webhooks", len(want.Webhooks))
	return now, nil
}

// cleanTemplate removes from the template the webhooks that earlier versions of this server
// expanded into it ("<n>.<name>"): the active configuration has them now.
func (c *Controller) cleanTemplate(ctx context.Context, tmpl *admissionregistrationv1.MutatingWebhookConfiguration) error {
	kept := policy.TemplateWebhooks(tmpl.Webhooks)
	if len(kept) == len(tmpl.Webhooks) {
		return nil
	}
	update := tmpl.DeepCopy()
	update.Webhooks = kept
	if _, err := c.opts.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, update, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("removing expanded webhooks from the template %s: %w", tmpl.Name, err)
	}
	return nil
}

// withdrawWait is how long a policy that stops injecting a SidecarSet must still wait for the
// webhooks that take it over (see policy.Withdrawing): until they have been in place, as written
// since, for the grace period; the whole period when they could not be written.
func (c *Controller) withdrawWait(since time.Time, err error) time.Duration {
	switch {
	case err != nil:
		return c.opts.Grace
	case since.IsZero() || c.opts.Grace <= 0:
		return 0
	}
	return since.Add(c.opts.Grace).Sub(c.opts.Clock.Now())
}

// keepWithdrawn returns the wanted policies and bindings with the owned policies that would stop
// injecting a SidecarSet (policy.Withdrawing), and their bindings, kept as they are, and the names
// of those kept.
func keepWithdrawn(have map[string]*admissionregistrationv1.MutatingAdmissionPolicy, haveBindings map[string]*admissionregistrationv1.MutatingAdmissionPolicyBinding,
	want []*admissionregistrationv1.MutatingAdmissionPolicy, wantBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding,
) ([]*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding, []string) {
	kept := policy.Withdrawing(have, want)
	if len(kept) == 0 {
		return want, wantBindings, nil
	}
	keep := sets.New(kept...)
	var policies []*admissionregistrationv1.MutatingAdmissionPolicy
	for _, p := range want {
		if !keep.Has(p.Name) {
			policies = append(policies, p)
		}
	}
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for _, b := range wantBindings {
		if !keep.Has(b.Spec.PolicyName) {
			bindings = append(bindings, b)
		}
	}
	for _, name := range kept {
		policies = append(policies, have[name])
		if b := haveBindings[name]; b != nil {
			bindings = append(bindings, b)
		}
	}
	return policies, bindings, kept
}

// members returns the SidecarSets p injects, and those the wanted policy of its name would.
func members(p *admissionregistrationv1.MutatingAdmissionPolicy, want []*admissionregistrationv1.MutatingAdmissionPolicy) []string {
	var out []string
	for name := range policy.Members(p) {
		out = append(out, name)
	}
	for _, w := range want {
		if w.Name == p.Name && w != p {
			for name := range policy.Members(w) {
				out = append(out, name)
			}
		}
	}
	return out
}
