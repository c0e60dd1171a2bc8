package apiserver

import (
	"net/http"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

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
			if err := in.Open(r.Context()); err != nil {
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
