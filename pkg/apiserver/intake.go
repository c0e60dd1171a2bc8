package apiserver

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/klog/v2"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/sidecarset/apiserver/pkg/admission/webhook"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
)

// intakeGate has every write that changes what a SidecarSet injects (create, update, patch, and
// the /rollout actions, which may roll back the spec) wait for injectionsync.Intake.Open before it
// is stored, so that the pods created once it returns reach an injector that knows it. Set is
// called once the server knows the main cluster; until then, and without one, writes pass.
type intakeGate struct {
	intake atomic.Pointer[injectionsync.Intake]
}

// Set makes the gate open in before writes.
func (g *intakeGate) Set(in *injectionsync.Intake) { g.intake.Store(in) }

// Wrap gates the SidecarSet writes of h.
func (g *intakeGate) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if in := g.intake.Load(); in != nil && changesInjection(r) {
			if err := in.Open(r.Context(), intakeNamespace(r)); err != nil {
				status := apierrors.NewServiceUnavailable("the SidecarSet was not written: the injection webhooks could not be made to receive its pods (retry): " + err.Error())
				responsewriters.ErrorNegotiated(status, Codecs, schema.GroupVersion{}, w, r)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// changesInjection reports whether r writes the spec of a SidecarSet or a NamespacedSidecarSet
// (not a dry run: nothing is stored).
func changesInjection(r *http.Request) bool {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || !info.IsResourceRequest || info.APIGroup != apps.GroupName {
		return false
	}
	if info.Resource != "sidecarsets" && info.Resource != "namespacedsidecarsets" {
		return false
	}
	if _, dry := r.URL.Query()["dryRun"]; dry {
		return false
	}
	switch info.Subresource {
	case "":
		return info.Verb == "create" || info.Verb == "update" || info.Verb == "patch"
	case "rollout":
		return info.Verb == "create"
	}
	return false
}

// intakeNamespace is the namespace whose pods a write of r concerns: a NamespacedSidecarSet's, or
// "" (every namespace) for a SidecarSet.
func intakeNamespace(r *http.Request) string {
	if info, ok := request.RequestInfoFrom(r.Context()); ok && info.Resource == "namespacedsidecarsets" {
		return info.Namespace
	}
	return ""
}

// settleTimeout bounds how long a SidecarSet write waits for this replica's injector to know it.
const settleTimeout = 5 * time.Second

// writeSettler makes the writes of a SidecarSet store return only once this replica's injection
// index has taken them in: a pod created right after the write, sent to this replica (by the
// intake webhooks, or by a selective webhook for an update), then gets what was written, not
// what the informer held a few milliseconds earlier. Status writes are left alone (the status
// store is a copy made before hook). A write the index has not taken in within settleTimeout
// (the informer stopped or relisting) returns anyway.
type writeSettler struct {
	seen   *webhook.Watermark
	synced func() bool
}

func settleWrites(seen *webhook.Watermark, synced func() bool) writeSettler {
	return writeSettler{seen: seen, synced: synced}
}

// hook installs the waits on store's creates and updates.
func (s writeSettler) hook(store *genericregistry.Store) {
	if s.seen == nil {
		return
	}
	store.AfterCreate = func(obj runtime.Object, opts *metav1.CreateOptions) {
		if len(opts.DryRun) == 0 {
			s.settle(obj)
		}
	}
	store.AfterUpdate = func(obj runtime.Object, opts *metav1.UpdateOptions) {
		if len(opts.DryRun) == 0 {
			s.settle(obj)
		}
	}
}

// settle waits until the index has taken in obj's resourceVersion (not while the informer has
// not synced: the webhook refuses pods then anyway).
func (s writeSettler) settle(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil || !s.synced() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	if err := s.seen.Wait(ctx, m.GetResourceVersion()); err != nil {
		klog.InfoS("a SidecarSet write returns before this replica's injector has taken it in", "name", m.GetName(), "resourceVersion", m.GetResourceVersion(), "err", err)
	}
}
