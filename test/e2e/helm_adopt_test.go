package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/test/chart"
)

// automanagedLabel is the label kube-apiserver's autoregister controller puts on the APIServices
// it registers for CRD groups (value "true": kept in step with the CRDs as long as it is there).
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// kruiseAPIServices are the APIServices OpenKruise's CRDs have kube-apiserver register and the
// chart's take over at the cutover.
var kruiseAPIServices = []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io"}

// TestHelmTakesOverAutomanagedAPIServices runs the Helm cutover of docs/migration.md against the
// APIServices OpenKruise's CRDs leave: with OpenKruise's CRDs applied (kube-apiserver registers
// v1alpha1 and v1beta1.apps.kruise.io for them, labelled automanaged), plain `helm install` of the
// packaged chart is refused, naming such an APIService, and installs nothing; once the automanaged
// label is dropped (docs' step), `helm install --take-ownership` adopts both: the same objects (same
// UIDs) now carry the release's ownership and the chart's spec (the chart's Service, port 443, its
// caBundle and priorities), and keep them while the CRDs stay (kube-apiserver no longer puts its
// own spec back); `helm upgrade --reset-then-reuse-values` then keeps the values given at install
// (the certificate source among them: with the chart's default, the upgrade would fail for want
// of certificate files) while applying the new one.
//
// The local server gives way meanwhile (stop-server) and the chart's objects outside its namespace
// that the local cluster applied for it are deleted first, so that the APIServices are the only
// objects of the release that exist beforehand; the release goes into a namespace of its own. At
// the end the CRDs, the release and the namespace are deleted and the local server comes back with
// its registration (start-server). Serial, on a cluster of its own (hack/e2e.sh): it replaces the
// APIServices every other test reaches the server through.
func TestHelmTakesOverAutomanagedAPIServices(t *testing.T) {
	ctx := context.Background()
	const ns = "e2e-helm-adopt"
	helm, err := chart.Helm(root)
	if err != nil {
		t.Fatal(err)
	}
	aggregator, err := aggregatorclient.NewForConfig(restConfig)
	if err != nil {
		t.Fatal(err)
	}
	apiServices := aggregator.ApiregistrationV1().APIServices()
	caBundle := base64.StdEncoding.EncodeToString([]byte("e2e-helm-adopt CA"))
	// Certificates from existing Secrets (none exist: the server never starts, which the test does
	// not need) and nothing kept on uninstall.
	args := []string{"--namespace", ns, "--set", "certificates.source=existingSecrets",
		"--set", "certificates.existingSecrets.caBundle=" + caBundle, "--set", "keepOnUninstall=false"}
	pkg := packageChart(t, helm)

	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The CRDs first: with them gone, kube-apiserver registers no APIService of the group
		// again once the release's are deleted.
		if out, err := runKubectl(t, openKruiseCRDs, "delete", "--ignore-not-found", "--wait=true", "-f", "-"); err != nil {
			t.Errorf("deleting OpenKruise's CRDs: %v\n%s", err, out)
		}
		if out, err := runHelm(helm, "uninstall", "sidecarset", "--namespace", ns, "--ignore-not-found"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
		for _, name := range append(kruiseAPIServices, "v1.admission.kruise.io") {
			if err := apiServices.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting APIService %s: %v", name, err)
			}
		}
		if err := kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
		waitNamespaceGone(t, ns)
		if _, err := localUp("start-server"); err != nil {
			t.Errorf("the local server did not come back: %v", err)
		}
	})
	deleteOutsideNamespace(t, helm, ns, args)

	// OpenKruise's CRDs: kube-apiserver registers their group's versions as its own APIServices.
	if out, err := runKubectl(t, openKruiseCRDs, "apply", "-f", "-"); err != nil {
		t.Fatalf("OpenKruise's CRDs: %v\n%s", err, out)
	}
	uids := map[string]string{}
	eventually(t, "kube-apiserver's own APIServices for OpenKruise's CRDs", time.Minute, func(ctx context.Context) (bool, string) {
		for _, name := range kruiseAPIServices {
			as, err := apiServices.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if as.Labels[automanagedLabel] != "true" || as.Spec.Service != nil {
				return false, fmt.Sprintf("%s: labels %v, service %v", name, as.Labels, as.Spec.Service)
			}
			uids[name] = string(as.UID)
		}
		return true, ""
	})

	// Plain helm install: refused, naming an APIService, with nothing installed.
	install := append([]string{"install", "sidecarset", pkg, "--create-namespace"}, args...)
	out, err := runHelm(helm, install...)
	if err == nil || !strings.Contains(out, `APIService "v1`) || !strings.Contains(out, "exists and cannot be imported into the current release") {
		t.Fatalf("helm install over kube-apiserver's APIServices: %v, want it refused naming an APIService\n%s", err, out)
	}
	if out, err := runHelm(helm, "status", "sidecarset", "--namespace", ns); err == nil {
		t.Errorf("a release after the refused install:\n%s", out)
	}
	if _, err := kube.AppsV1().Deployments(ns).Get(ctx, "sidecarset-apiserver", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused install created the server's Deployment (%v)", err)
	}

	// The docs' step: drop the automanaged label (with it, kube-apiserver puts its own spec back
	// over the chart's at once), then take the APIServices over.
	if out, err := runKubectl(t, "", append(append([]string{"label", "apiservice"}, kruiseAPIServices...), automanagedLabel+"-")...); err != nil {
		t.Fatalf("kubectl label: %v\n%s", err, out)
	}
	if out, err := runHelm(helm, append(install, "--take-ownership")...); err != nil {
		t.Fatalf("helm install --take-ownership: %v\n%s", err, out)
	}
	want := map[string]apiregistrationv1.APIServiceSpec{
		"v1alpha1.apps.kruise.io": chartAPIService(ns, "v1alpha1", 100, caBundle),
		"v1beta1.apps.kruise.io":  chartAPIService(ns, "v1beta1", 200, caBundle),
	}
	// Adopted and kept as the chart has them: a check that holds for 10 s (kube-apiserver's
	// autoregister would have put its own spec back within milliseconds), not a wait.
	checkAdopted := func(what string) {
		t.Helper()
		consistently(t, what+": the APIServices as the chart has them", time.Second, 10*time.Second, func(ctx context.Context) (bool, string) {
			for name, spec := range want {
				as, err := apiServices.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, fmt.Sprintf("APIService %s: %v", name, err)
				}
				if problem := adoptedProblem(as, spec, ns, uids[name]); problem != "" {
					return false, fmt.Sprintf("APIService %s %s", name, problem)
				}
			}
			return true, ""
		})
	}
	checkAdopted("after helm install --take-ownership")

	// An upgrade as docs/install.md runs it: the install's values kept, the new one applied.
	if out, err := runHelm(helm, "upgrade", "sidecarset", pkg, "--namespace", ns, "--reset-then-reuse-values", "--set", "logLevel=3"); err != nil {
		t.Fatalf("helm upgrade --reset-then-reuse-values: %v\n%s", err, out)
	}
	dep, err := kube.AppsV1().Deployments(ns).Get(ctx, "sidecarset-apiserver", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--v=3") {
		t.Errorf("after the upgrade the server's args are %s, want --v=3", args)
	}
	checkAdopted("after helm upgrade")
}

// chartAPIService is the spec the chart renders for an APIService of apps.kruise.io.
func chartAPIService(ns, version string, versionPriority int32, caBundle string) apiregistrationv1.APIServiceSpec {
	ca, _ := base64.StdEncoding.DecodeString(caBundle)
	return apiregistrationv1.APIServiceSpec{
		Group: "apps.kruise.io", Version: version, GroupPriorityMinimum: 1000, VersionPriority: versionPriority, CABundle: ca,
		Service: &apiregistrationv1.ServiceReference{Namespace: ns, Name: "sidecarset-apiserver", Port: ptr.To[int32](443)},
	}
}

// adoptedProblem says what keeps as from being the APIService of uid adopted by the release
// sidecarset in ns with spec; empty when nothing does.
func adoptedProblem(as *apiregistrationv1.APIService, spec apiregistrationv1.APIServiceSpec, ns, uid string) string {
	switch {
	case string(as.UID) != uid:
		return fmt.Sprintf("has uid %s, not kube-apiserver's %s: created again, not adopted", as.UID, uid)
	case as.Labels["app.kubernetes.io/managed-by"] != "Helm" || as.Annotations["meta.helm.sh/release-name"] != "sidecarset" ||
		as.Annotations["meta.helm.sh/release-namespace"] != ns:
		return fmt.Sprintf("is not the release's: labels %v, annotations %v", as.Labels, as.Annotations)
	}
	if diff := cmp.Diff(spec, as.Spec); diff != "" {
		return "is not as the chart renders it (-chart +got):\n" + diff
	}
	if v := as.Labels[automanagedLabel]; v != "" {
		return fmt.Sprintf("is still labelled %s=%s", automanagedLabel, v)
	}
	return ""
}
