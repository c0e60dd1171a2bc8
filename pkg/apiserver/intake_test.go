package apiserver

import (
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// TestChangesInjection: the writes that wait for the intake are those that store what a
// SidecarSet or a NamespacedSidecarSet injects; reads, status, dry runs and other resources pass.
func TestChangesInjection(t *testing.T) {
	for _, tc := range []struct {
		name, url string
		info      request.RequestInfo
		want      bool
	}{
		{"create", "/apis/apps.kruise.io/v1alpha1/sidecarsets", request.RequestInfo{Verb: "create", Resource: "sidecarsets"}, true},
		{"update", "/apis/apps.kruise.io/v1beta1/sidecarsets/s", request.RequestInfo{Verb: "update", Resource: "sidecarsets", Name: "s"}, true},
		{"server-side apply", "/apis/apps.kruise.io/v1alpha1/sidecarsets/s", request.RequestInfo{Verb: "patch", Resource: "sidecarsets", Name: "s"}, true},
		{"namespaced create", "/apis/apps.kruise.io/v1alpha1/namespaces/n/namespacedsidecarsets", request.RequestInfo{Verb: "create", Resource: "namespacedsidecarsets", Namespace: "n"}, true},
		{"rollback", "/apis/apps.kruise.io/v1alpha1/sidecarsets/s/rollout", request.RequestInfo{Verb: "create", Resource: "sidecarsets", Subresource: "rollout", Name: "s"}, true},
		{"rollout view", "/apis/apps.kruise.io/v1alpha1/sidecarsets/s/rollout", request.RequestInfo{Verb: "get", Resource: "sidecarsets", Subresource: "rollout", Name: "s"}, false},
		{"status", "/apis/apps.kruise.io/v1alpha1/sidecarsets/s/status", request.RequestInfo{Verb: "update", Resource: "sidecarsets", Subresource: "status", Name: "s"}, false},
		{"dry run", "/apis/apps.kruise.io/v1alpha1/sidecarsets?dryRun=All", request.RequestInfo{Verb: "create", Resource: "sidecarsets"}, false},
		{"delete", "/apis/apps.kruise.io/v1alpha1/sidecarsets/s", request.RequestInfo{Verb: "delete", Resource: "sidecarsets", Name: "s"}, false},
		{"list", "/apis/apps.kruise.io/v1alpha1/sidecarsets", request.RequestInfo{Verb: "list", Resource: "sidecarsets"}, false},
		{"revisions", "/apis/apps.kruise.io/v1alpha1/sidecarsetrevisions", request.RequestInfo{Verb: "create", Resource: "sidecarsetrevisions"}, false},
		{"injection review", "/apis/admission.kruise.io/v1/sidecarinjections", request.RequestInfo{Verb: "create", Resource: "sidecarinjections", APIGroup: "admission.kruise.io"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := tc.info
			info.IsResourceRequest = true
			if info.APIGroup == "" {
				info.APIGroup = "apps.kruise.io"
			}
			r := httptest.NewRequest("POST", tc.url, nil)
			r = r.WithContext(request.WithRequestInfo(r.Context(), &info))
			if got := changesInjection(r); got != tc.want {
				t.Errorf("changesInjection = %v, want %v", got, tc.want)
			}
		})
	}
}
