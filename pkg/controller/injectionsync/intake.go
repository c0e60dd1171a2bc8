package injectionsync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync/plan"
)

// Intake makes a SidecarSet write wait until kube-apiserver sends the server every pod that the
// written SidecarSet may select. The selective webhooks (one per label key, with the values the
// SidecarSets select) and the policies are written by the leader after the write, and
// kube-apiserver loads them later still; until then the pods of a new SidecarSet, or of a new
// version, would be created without it. So, once a write has passed validation and admission and
// before it is stored, Open adds the intake webhooks to their own configuration
// (IntakeWebhooks: a few webhooks, not the active configuration's selective ones; the pods of a
// scope to the server, whose injector answers from its own cache and so knows the SidecarSet as
// soon as it is stored): for a cluster SidecarSet, the pods with the label key its versions
// written require (every pod when one requires none), for a NamespacedSidecarSet the pods of its
// own namespace alone (apps.IntakeScopes, plan.IntakeState). It holds them for Hold and waits
// LoadDelay for kube-apiserver to load them, unless intake webhooks that cover the scope have been
// in place that long already. Writes that follow within Hold/2 of the last hold of their scope (or
// of every pod) find it in place and write nothing; a write past it extends the hold: at most one
// write of the configuration per scope per Hold/2, whatever a namespace's editor does. The leader
// drops each hold (plan.Sync) once its time has passed and the selective webhooks have been in
// place for LoadDelay: a bulk apply pays one LoadDelay, and pods no SidecarSet selects call the
// server only meanwhile, in the scopes written. Every replica opens; only the leader drops, with
// the resourceVersion it planned from, so a hold extended meanwhile keeps them.
type Intake struct {
	// Kube reads and writes the webhook configurations.
	Kube kubernetes.Interface
	// Template names the shipped webhook configuration; the active one is ActiveWebhooks(Template).
	Template string
	// ExcludedNamespaces are never sent to the server (webhookconfig.ExpandWebhooks).
	ExcludedNamespaces []string
	// Hold is how long one open keeps the intake webhooks; LoadDelay how long kube-apiserver may
	// take to load a write of the configuration.
	Hold, LoadDelay time.Duration
	// Clock is the time (nil: the real one).
	Clock clock.Clock
	// Owner, when set, returns the owner reference the intake configuration is created with (as
	// Options.Owner; the leader sets it on a later pass when it cannot be read).
	Owner func(context.Context) (*metav1.OwnerReference, error)

	mu    sync.Mutex           // one read or write of the configuration at a time in this replica
	known map[string]knownHold // by scope ("": every pod), the holds this replica wrote or read last
}

// knownHold is a hold as this replica last saw it: until when it lasts, and when kube-apiserver
// has loaded intake webhooks that cover its scope.
type knownHold struct {
	until, loadedAt time.Time
}

// conflictRetries bounds the updates of an open that meet another writer's.
const conflictRetries = 5

// Open returns once intake webhooks that cover scope (apps.IntakeScopes: a namespace, a label key,
// or "" for every pod) are in place and loaded, held for at least Hold/2 from now; nil at once
// where no injection webhooks are configured. Call it for a write about to be stored (not a dry
// run).
func (i *Intake) Open(ctx context.Context, scope string) error {
	if i == nil || i.Kube == nil || i.Template == "" {
		return nil
	}
	clk := i.clock()
	loadedAt, err := i.hold(ctx, scope, clk)
	if err != nil {
		return err
	}
	wait := loadedAt.Sub(clk.Now())
	if wait <= 0 {
		return nil
	}
	t := clk.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// hold makes sure a hold covers scope for Hold/2 more, and returns when its intake webhooks
// are loaded. The writes of one replica take turns here, not while they wait for the load.
func (i *Intake) hold(ctx context.Context, scope string, clk clock.Clock) (time.Time, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if at, ok := i.knownHeld(scope, clk.Now()); ok {
		return at, nil
	}
	for try := 0; ; try++ {
		at, err := i.open(ctx, scope, clk)
		if err == nil {
			return at, nil
		}
		if !apierrors.IsConflict(err) || try == conflictRetries {
			return time.Time{}, err
		}
	}
}

// knownHeld returns when the intake webhooks covering scope are loaded, if a hold this replica
// knows covers it for Hold/2 more; it forgets the holds that have ended.
func (i *Intake) knownHeld(scope string, now time.Time) (time.Time, bool) {
	var at time.Time
	held := false
	for s, k := range i.known {
		switch {
		case !k.until.After(now):
			delete(i.known, s)
		case (s == "" || s == scope) && k.until.Sub(now) >= i.Hold/2:
			if !held || k.loadedAt.Before(at) {
				at = k.loadedAt
			}
			held = true
		}
	}
	return at, held
}

func (i *Intake) clock() clock.Clock {
	if i.Clock == nil {
		return clock.RealClock{}
	}
	return i.Clock
}

// open reads the intake configuration (created when missing) and, unless a hold there covers
// scope for Hold/2 more, adds or extends its hold with one write; it records the hold and
// returns when kube-apiserver has loaded intake webhooks that cover scope.
func (i *Intake) open(ctx context.Context, scope string, clk clock.Clock) (time.Time, error) {
	cl := i.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	tmpl, err := cl.Get(ctx, i.Template, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return time.Time{}, nil // no injection webhooks to route pods with
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the injection webhooks %s: %w", i.Template, err)
	}
	name := IntakeWebhooks(i.Template)
	intake, err := cl.Get(ctx, name, metav1.GetOptions{})
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return time.Time{}, fmt.Errorf("reading the intake webhooks %s: %w", name, err)
	}
	if missing {
		intake = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}}}
		if i.Owner != nil {
			if owner, err := i.Owner(ctx); err == nil && owner != nil {
				intake.OwnerReferences = []metav1.OwnerReference{*owner}
			}
		}
	}
	now := clk.Now()
	state := plan.ReadIntake(intake, tmpl.Webhooks, i.ExcludedNamespaces)
	next, write := state.Open(scope, now, i.Hold)
	if write {
		open := next.Webhooks(tmpl.Webhooks, i.ExcludedNamespaces)
		if len(open) == 0 {
			return time.Time{}, errors.New("the injection webhooks' template holds no webhook")
		}
		intake.Webhooks = open
		next.Annotate(&intake.ObjectMeta)
		if err := i.write(ctx, intake, missing); err != nil {
			return time.Time{}, err
		}
	}
	since, _ := next.CoveredSince(scope)
	loadedAt := since.Add(i.LoadDelay)
	if since.Equal(now) {
		// Covered from this write on: loaded once kube-apiserver had the time to load it.
		loadedAt = clk.Now().Add(i.LoadDelay)
		klog.V(2).InfoS("sending the pods of a scope to the server until the injection webhooks serve the SidecarSets written",
			"configuration", intake.Name, "scope", scope, "until", next.Until(scope))
	}
	if i.known == nil {
		i.known = map[string]knownHold{}
	}
	i.known[scope] = knownHold{until: next.Until(scope), loadedAt: loadedAt}
	return loadedAt, nil
}

// write creates or updates the intake configuration; a conflict is returned as such (the open is
// tried again), any other failure counted.
func (i *Intake) write(ctx context.Context, intake *admissionregistrationv1.MutatingWebhookConfiguration, missing bool) error {
	cl := i.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	var err error
	if missing {
		_, err = cl.Create(ctx, intake, metav1.CreateOptions{})
	} else {
		_, err = cl.Update(ctx, intake, metav1.UpdateOptions{})
	}
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		return apierrors.NewConflict(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), intake.Name, err)
	}
	writeErrors.WithLabelValues(string(plan.Webhooks)).Inc()
	return fmt.Errorf("sending the pods to the server while a SidecarSet is written: %w", err)
}
