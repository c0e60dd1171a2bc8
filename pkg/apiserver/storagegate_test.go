package apiserver

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
)

func TestGated(t *testing.T) {
	for path, want := range map[string]bool{
		"/apis/apps.kruise.io":                                false,
		"/apis/apps.kruise.io/":                               false,
		"/apis/apps.kruise.io/v1alpha1":                       false,
		"/apis/apps.kruise.io/v1alpha1/":                      false,
		"/apis/apps.kruise.io/v1alpha1/sidecarsets":           true,
		"/apis/apps.kruise.io/v1alpha1/sidecarsets/a/rollout": true,
		"/apis/apps.kruise.io/v1alpha1/sidecarsetrevisions":   true,
		"/apis/admission.kruise.io/v1/sidecarinjections":      false,
		"/readyz": false,
		"/openapi/v3/apis/apps.kruise.io/v1alpha1":       false,
		"/apis/apps.kruise.io.evil/v1alpha1/sidecarsets": false,
	} {
		if got := gated(path); got != want {
			t.Errorf("gated(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestDecoupleFromStorage(t *testing.T) {
	etcd := healthz.NamedCheck("etcd", func(*http.Request) error { return nil })
	ready := healthz.NamedCheck("etcd-readiness", func(*http.Request) error { return nil })
	other := healthz.NamedCheck("informer-sync", func(*http.Request) error { return nil })
	c := &genericapiserver.Config{
		HealthzChecks: []healthz.HealthChecker{etcd, other},
		LivezChecks:   []healthz.HealthChecker{etcd, other},
		ReadyzChecks:  []healthz.HealthChecker{etcd, ready, other},
	}
	if got := DecoupleFromStorage(c); got == nil || got.Name() != "etcd" {
		t.Fatalf("returned %v, want the etcd check", got)
	}
	names := func(cs []healthz.HealthChecker) string {
		var out []string
		for _, ch := range cs {
			out = append(out, ch.Name())
		}
		return strings.Join(out, ",")
	}
	if n := names(c.LivezChecks); n != "informer-sync" {
		t.Errorf("livez checks %s", n)
	}
	if n := names(c.ReadyzChecks); n != "informer-sync" {
		t.Errorf("readyz checks %s", n)
	}
	if n := names(c.HealthzChecks); n != "etcd,informer-sync" {
		t.Errorf("healthz checks %s", n)
	}
}

func TestStorageGateWrap(t *testing.T) {
	g := NewStorageGate(nil, 0)
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	if rec := get("/apis/apps.kruise.io/v1alpha1/sidecarsets"); rec.Code != http.StatusOK {
		t.Fatalf("storage up: %d", rec.Code)
	}
	g.observe(errors.New("context deadline exceeded"))
	rec := get("/apis/apps.kruise.io/v1alpha1/sidecarsets")
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "storage (etcd) is unavailable") || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("storage down: %d %s %v", rec.Code, rec.Body.String(), rec.Header())
	}
	if rec := get("/apis/admission.kruise.io/v1/sidecarinjections"); rec.Code != http.StatusOK {
		t.Fatalf("injection gated: %d", rec.Code)
	}
	g.observe(nil)
	if rec := get("/apis/apps.kruise.io/v1alpha1/sidecarsets"); rec.Code != http.StatusOK {
		t.Fatalf("storage back: %d", rec.Code)
	}
}
