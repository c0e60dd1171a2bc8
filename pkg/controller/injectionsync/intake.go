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

	"github.com/sidecarset/apiserver/pkg/admission/policy"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync/plan"
)

// Intake makes a SidecarSet write wait until kube-apiserver sends the server every pod that the
// written SidecarSet may select. The selective webhooks (one per label key, with the values the
// SidecarSets select) and the policies are written by the leader after the write, and
// kube-apiserver loads them later still; until then the pods of a new SidecarSet, or of a new
// version, would be created without it. So, before a write, Open adds the intake webhooks to the
// active configuration (policy.IntakeWebhooks: every pod of the webhooks' namespaces to the
// server, whose injector answers from its own cache and so knows the SidecarSet as soon as it is
// stored), holds them for Hold and waits LoadDelay for kube-apiserver to load them. Writes that
// follow within Hold/2 of the last hold find them in place and do not wait; a write past it
// extends the hold (one update of the configuration, no wait). The leader removes them (plan.Sync)
// once the hold has passed and the selective webhooks have been in place for LoadDelay: a bulk
// apply pays one LoadDelay, and pods no SidecarSet selects call the server only meanwhile.
// Every replica opens; only the leader closes, with the resourceVersion it planned from, so a
// hold extended meanwhile keeps them.
type Intake struct {
	// Kube reads and writes the webhook configurations.
	Kube kubernetes.Interface
	// Template names the shipped webhook configuration; the active one is ActiveWebhooks(Template).
	Template string
	// ExcludedNamespaces are never sent to the server (policy.ExpandWebhooks).
	ExcludedNamespaces []string
	// Hold is how long one open keeps the intake webhooks; LoadDelay how long kube-apiserver may
	// take to load a write of the configuration.
	Hold, LoadDelay time.Duration
	// Clock is the time (nil: the real one).
	Clock clock.Clock

	mu       sync.Mutex // one open at a time in this replica
	until    time.Time  // the hold this replica wrote or read last
	loadedAt time.Time  // when the intake webhooks it saw in place are loaded
}

// conflictRetries bounds the updates of an open that meet another writer's.
const conflictRetries = 5

// Open returns once the intake webhooks are in place and loaded, held for at least Hold/2 from
// now; nil at once where no injection webhooks are configured.
func (i *Intake) Open(ctx context.Context) error {
	if i == nil || i.Kube == nil || i.Template == "" {
		return nil
	}
	clk := i.clock()
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.until.Sub(clk.Now()) < i.Hold/2 {
		var err error
		for try := 0; ; try++ {
			if err = i.open(ctx, clk); !apierrors.IsConflict(err) || try == conflictRetries {
				break
			}
		}
		if err != nil {
			return err
		}
	}
	wait := i.loadedAt.Sub(clk.Now())
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

func (i *Intake) clock() clock.Clock {
	if i.Clock == nil {
		return clock.RealClock{}
	}
	return i.Clock
}

// open adds or extends the intake webhooks with one write of the active configuration (created
// when missing), and records the hold and when they are loaded.
func (i *Intake) open(ctx context.Context, clk clock.Clock) error {
	cl := i.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	tmpl, err := cl.Get(ctx, i.Template, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // no injection webhooks to route pods with
	}
	if err != nil {
		return fmt.Errorf("reading the injection webhooks %s: %w", i.Template, err)
	}
	active, err := cl.Get(ctx, ActiveWebhooks(i.Template), metav1.GetOptions{})
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return fmt.Errorf("reading the injection webhooks %s: %w", ActiveWebhooks(i.Template), err)
	}
	if missing {
		active = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
			Name: ActiveWebhooks(i.Template), Labels: map[string]string{apps.ManagedByLabel: apps.ManagedByValue}}}
	}
	now := clk.Now()
	selective, open := policy.SplitIntake(active.Webhooks)
	opened, perr := time.Parse(time.RFC3339Nano, active.Annotations[apps.IntakeOpenedAnnotation])
	if len(open) == 0 || perr != nil {
		open, opened = policy.IntakeWebhooks(tmpl.Webhooks, i.ExcludedNamespaces), time.Time{}
	}
	if len(open) == 0 {
		return errors.New("the injection webhooks' template holds no webhook")
	}
	until := now.Add(i.Hold)
	active.Webhooks = append(selective, open...)
	metav1.SetMetaDataAnnotation(&active.ObjectMeta, apps.IntakeUntilAnnotation, until.UTC().Format(time.RFC3339Nano))
	if !opened.IsZero() {
		metav1.SetMetaDataAnnotation(&active.ObjectMeta, apps.IntakeOpenedAnnotation, opened.UTC().Format(time.RFC3339Nano))
	} else {
		metav1.SetMetaDataAnnotation(&active.ObjectMeta, apps.IntakeOpenedAnnotation, now.UTC().Format(time.RFC3339Nano))
	}
	if missing {
		_, err = cl.Create(ctx, active, metav1.CreateOptions{})
	} else {
		_, err = cl.Update(ctx, active, metav1.UpdateOptions{})
	}
	if err != nil {
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			writeErrors.WithLabelValues(string(plan.Webhooks)).Inc()
			return fmt.Errorf("sending every pod to the server while a SidecarSet is written: %w", err)
		}
		return apierrors.NewConflict(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), active.Name, err)
	}
	i.until = until
	if opened.IsZero() {
		// Added now: loaded once kube-apiserver had the time to load this write.
		i.loadedAt = clk.Now().Add(i.LoadDelay)
		klog.V(2).InfoS("sending every pod to the server until the injection webhooks serve the SidecarSets written", "configuration", active.Name, "until", until)
	} else if at := opened.Add(i.LoadDelay); at.After(i.loadedAt) {
		i.loadedAt = at
	}
	return nil
}
