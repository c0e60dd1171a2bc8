// Package apiservice is what check and migrate know of the server's APIServices: their names,
// whether one takes a group version from the CRDs, and their read.
package apiservice

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// Names are the APIServices this server registers.
var Names = []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io", "v1.admission.kruise.io"}

// Takes reports whether one of this server's APIServices (routed to its service, not served by
// kube-apiserver itself) takes group/version: a request there reaches this server, so a CRD of
// that group and version is hidden.
func Takes(services map[string]*apiregistrationv1.APIService, group, version string) bool {
	as := services[version+"."+group]
	return as != nil && as.Spec.Service != nil
}

// Get reads the APIServices of Names that exist, by name. When a read fails it returns those read
// before it, what it could not read and the error.
func Get(ctx context.Context, aggregator aggregatorclient.Interface) (map[string]*apiregistrationv1.APIService, string, error) {
	services := map[string]*apiregistrationv1.APIService{}
	for _, name := range Names {
		as, err := aggregator.ApiregistrationV1().APIServices().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return services, "apiservices.apiregistration.k8s.io " + name, err
		default:
			services[name] = as
		}
	}
	return services, "", nil
}
