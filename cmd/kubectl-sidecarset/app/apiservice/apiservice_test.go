package apiservice

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/fake"
)

func routed(name string) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "sidecarset-system", Name: "sidecarset-apiserver"}}}
}

// TestTakes: an APIService routed to a service takes its group version from the CRDs; one served
// by kube-apiserver itself (a CRD's) or none does not.
func TestTakes(t *testing.T) {
	local := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.apps.kruise.io"}}
	services := map[string]*apiregistrationv1.APIService{"v1alpha1.apps.kruise.io": routed("v1alpha1.apps.kruise.io"), "v1beta1.apps.kruise.io": local}
	for _, tc := range []struct {
		version string
		want    bool
	}{
		{"v1alpha1", true},
		{"v1beta1", false},
		{"v1", false},
	} {
		if got := Takes(services, "apps.kruise.io", tc.version); got != tc.want {
			t.Errorf("Takes(%s) = %v, want %v", tc.version, got, tc.want)
		}
	}
}

// TestGet: Get returns the APIServices of Names that exist; a failed read stops it, naming what
// it could not read, with those read before.
func TestGet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failOn   string
		want     []string
		wantWhat string
	}{
		{"all present but one", "", []string{"v1.admission.kruise.io", "v1alpha1.apps.kruise.io"}, ""},
		{"a read fails", "v1beta1.apps.kruise.io", []string{"v1alpha1.apps.kruise.io"}, "apiservices.apiregistration.k8s.io v1beta1.apps.kruise.io"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewSimpleClientset(routed("v1alpha1.apps.kruise.io"), routed("v1.admission.kruise.io"))
			client.PrependReactor("get", "apiservices", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.(k8stesting.GetAction).GetName() == tc.failOn {
					return true, nil, errors.New("timeout")
				}
				return false, nil, nil
			})
			services, what, err := Get(context.Background(), client)
			if (err != nil) != (tc.failOn != "") || what != tc.wantWhat {
				t.Fatalf("Get: %q, %v; want %q", what, err, tc.wantWhat)
			}
			var got []string
			for name := range services {
				got = append(got, name)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("APIServices (-want +got):\n%s", diff)
			}
		})
	}
}
