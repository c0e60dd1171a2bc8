package apiserver

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
)

// intakeGate hands the SidecarSet stores the injectionsync.Intake they open before a write that
// changes what a SidecarSet injects is stored (see sidecarsetstorage.Intake). Set is called once
// the server knows the main cluster; until then, and without one, writes pass.
type intakeGate struct {
	intake atomic.Pointer[injectionsync.Intake]
}

// Set makes the gate open in before writes.
func (g *intakeGate) Set(in *injectionsync.Intake) { g.intake.Store(in) }

// Open opens the intake for namespace ("": every namespace), once one is set.
func (g *intakeGate) Open(ctx context.Context, namespace string) error {
	if g == nil {
		return nil
	}
	return g.intake.Load().Open(ctx, namespace) // a nil Intake opens nothing
}

// settleTimeout bounds how long a SidecarSet write waits for this replica's injector to know it.
const settleTimeout = 5 * time.Second

// writeSettler makes the writes of a SidecarSet store return only once this replica's injection
// index has taken them in: a pod created right after the write, sent to this replica (by the
// intake webhooks, or by a selective webhook for an update), then gets what was written, not
// what the informer held a few milliseconds earlier. Status writes are left alone (the status
// store is a copy made before hook). A write the index has not taken in within settleTimeout
// (the informer stopped or relisting) returns anyway.
//
// Each kind waits on the watermark of its own stream (webhook.Marks): the informer merges two
// watches, and an event of one kind says nothing of how far the other has come.
type writeSettler struct {
	seen   *webhook.Marks
	synced func() bool
}

func settleWrites(seen *webhook.Marks, synced func() bool) writeSettler {
	return writeSettler{seen: seen, synced: synced}
}

// hook installs the waits on store's creates and updates; namespaced tells the store of
// NamespacedSidecarSets.
func (s writeSettler) hook(store *genericregistry.Store, namespaced bool) {
	if s.seen == nil {
		return
	}
	mark := s.seen.Lane(namespaced)
	store.AfterCreate = func(obj runtime.Object, opts *metav1.CreateOptions) {
		if len(opts.DryRun) == 0 {
			s.settle(mark, obj)
		}
	}
	store.AfterUpdate = func(obj runtime.Object, opts *metav1.UpdateOptions) {
		if len(opts.DryRun) == 0 {
			s.settle(mark, obj)
		}
	}
}

// settle waits until the index has taken in obj's resourceVersion in mark, the watermark of its
// stream (not while the informer has not synced: the webhook refuses pods then anyway).
func (s writeSettler) settle(mark *webhook.Watermark, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil || !s.synced() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := mark.Wait(ctx, m.GetResourceVersion()); err != nil {
		klog.InfoS("a SidecarSet write returns before this replica's injector has taken it in", "name", m.GetName(), "resourceVersion", m.GetResourceVersion(), "err", err)
	}
}
