package e2e

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
	"github.com/sidecarset/apiserver/test/chart"
)

// helmNamespace is the namespace of its own the chart is installed into, the default one, which the
// local server uses too; kruise-system, beside it, stands for OpenKruise's, owned by another Helm
// release.
const helmNamespace = serverNamespace

// TestRealNodeHelm installs the Helm chart, packaged by `helm package`, on the real node as a
// platform team would: `helm install` into a namespace of its own (--create-namespace) beside a kruise-system namespace
// labelled as owned by another Helm release (OpenKruise's), with the local images, the real node's
// node selector and toleration for the server, etcd and the backups given as values, self-managed
// certificates (the chart's default: nothing prepared) and the server on a port other than the
// default 8443 (securePort, as a managed control plane may need). The local server gives way meanwhile,
// as in TestRealNodeDeployment, whose DNS, routes and volumes it shares; the objects the local
// cluster applied for it (its namespace, the release's, with what is in it; outside it RBAC, the
// webhook template, the guards, the APIServices) are deleted first, since Helm adopts no object it
// did not create, and applied again when the local server comes back.
//
// It checks that the APIServices become Available (kube-apiserver verifies the server's certificate
// with the caBundle the server set), that the installation created its CAs and certificates in
// Secrets, each leaf signed by its CA, the server listening on the chosen port; the other release's namespace is untouched, a
// pod on the real node is injected and upgraded in place; that `helm upgrade` with a changed value
// (the log level) rolls the server's pods while pod creates keep being injected, none refused; and
// that `helm uninstall` leaves no MutatingAdmissionPolicy, binding or webhook configuration while
// etcd's claims, the backup claim and etcd's data on the volumes stay.
func TestRealNodeHelm(t *testing.T) {
	requireRealNode(t, true)
	if os.Getuid() != 0 {
		t.Skip("needs root (iptables rules for the Services' cluster IPs, DNS on port 53)")
	}
	ctx := context.Background()
	const ns = helmNamespace
	dnsIP := os.Getenv("NODE_DNS")
	if dnsIP == "" {
		dnsIP = "10.222.0.1"
	}
	helm, err := chart.Helm(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := localUp("node-deploy-images"); err != nil {
		t.Fatal(err)
	}
	values := writeHelmValues(t)
	args := []string{"--namespace", ns, "-f", values}
	pkg := packageChart(t, helm)

	ensureBridge(t, dnsIP)
	ownKruiseSystem(t)
	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := localUp("start-server"); err != nil {
			t.Errorf("the local server did not come back: %v", err)
		}
	})
	// The chart's objects outside the namespace go first: the APIServices among them route to the
	// local server's Service in the namespace, and the namespace controller does not finish deleting
	// a namespace while discovery of an API group fails.
	deleteOutsideNamespace(t, helm, ns, args)
	// The local server's namespace is the release's: it goes with the local server's objects in it
	// (ServiceAccount, RBAC, the ExternalName Service), and helm install --create-namespace creates
	// it again.
	if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitNamespaceGone(t, ns)

	dns, err := startClusterDNS(dnsIP)
	if err != nil {
		t.Fatalf("cluster DNS on %s:53 (the pod bridge's address; is the real node up?): %v", dnsIP, err)
	}
	t.Cleanup(dns.stop)
	router, err := startServiceRouter(dnsIP, fmt.Sprintf("127.0.0.1:%d", envInt("KUBE_PORT", 36443)), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(router.stop)
	createLocalVolumes(t)
	// Runs before the volumes go: the kept claims and the namespace, then the release if it is
	// still there (a failure).
	t.Cleanup(func() {
		_, _ = runHelm(helm, "uninstall", "sidecarset", "--namespace", ns, "--wait", "--timeout=180s", "--ignore-not-found")
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		waitNamespaceGone(t, ns)
	})

	installed := time.Now()
	if out, err := runHelm(helm, append([]string{"install", "sidecarset", pkg, "--create-namespace"}, args...)...); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	waitReady(t, ns, "app=sidecarset-etcd", 3, 6*time.Minute)
	servers := waitReady(t, ns, "app=sidecarset-apiserver", 2, 4*time.Minute)
	checkServerImage(t, servers)
	checkEtcdCluster(t, ns)
	waitAPIServices(t, ns)
	t.Logf("helm install to APIServices Available: %v", time.Since(installed).Round(time.Second))
	checkSelfManagedCertificates(t, ns, servers)
	checkKruiseSystemOwned(t)

	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-helm"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-helm"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	before := setupRealNode(t, ss, realPod("rn-helm-0", "rn-helm"))[0]
	if st := sidecar.ContainerStatus(before, "sidecar1"); st == nil || st.State.Running == nil {
		t.Fatalf("rn-helm-0 not injected: %+v", before.Spec.Containers)
	}
	upgradeInPlace(t, "rn-helm", before, "sidecar1", `{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:v2"}]}}`)

	helmUpgradeWhileInjecting(t, helm, pkg, ns, args)
	checkKruiseSystemOwned(t)

	policies, err := runKubectl(t, "", "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings,mutatingwebhookconfigurations", "-l", "app.kubernetes.io/managed-by=sidecarset-apiserver", "-o", "name")
	if err != nil || !strings.Contains(policies, "mutatingadmissionpolicy.") {
		t.Fatalf("no policy of the installed server before helm uninstall: %v\n%s", err, policies)
	}
	t.Logf("before helm uninstall: %s", strings.Join(strings.Fields(policies), " "))
	if out, err := runHelm(helm, "uninstall", "sidecarset", "--namespace", ns, "--wait", "--timeout=180s"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	// Every second: each try runs kubectl.
	eventuallyEvery(t, "helm uninstall to leave no policy, binding or webhook configuration", time.Second, 2*time.Minute, func(ctx context.Context) (bool, string) {
		out, err := runKubectl(t, "", "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings,mutatingwebhookconfigurations", "-l", "app.kubernetes.io/managed-by=sidecarset-apiserver", "-o", "name")
		if err != nil {
			return false, fmt.Sprintf("kubectl get: %v: %s", err, out)
		}
		left := strings.Join(strings.Fields(out), " ")
		_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "sidecarset-injector", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			left += " mutatingwebhookconfiguration/sidecarset-injector"
		}
		return strings.TrimSpace(left) == "", "left behind: " + left
	})
	checkDataKept(t, ns)
	checkKruiseSystemOwned(t)
	_ = kube.CoreV1().Pods(realNodeNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
}

// packageChart returns the chart packaged by helm package (what a release ships).
func packageChart(t *testing.T, helm string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command(helm, "package", filepath.Join(root, chart.Dir), "--destination", dir).CombinedOutput(); err != nil {
		t.Fatalf("helm package: %v\n%s", err, out)
	}
	pkgs, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil || len(pkgs) != 1 {
		t.Fatalf("helm package wrote %v (%v), want one .tgz", pkgs, err)
	}
	return pkgs[0]
}

// helmSecurePort is the server's port in TestRealNodeHelm: not the default 8443.
const helmSecurePort = 10443

// checkSelfManagedCertificates: the installation created its two CAs and four certificates in
// Secrets of ns, labelled as the server's, each certificate signed by its CA and valid for the
// names the chart's Services give; the APIServices carry the serving CA as caBundle; the server
// listens on helmSecurePort.
func checkSelfManagedCertificates(t *testing.T, ns string, servers []corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	secret := func(name string) *corev1.Secret {
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Secret %s of the self-managed certificates: %v", name, err)
		}
		if s.Labels["app.kubernetes.io/managed-by"] != "sidecarset-apiserver" {
			t.Errorf("Secret %s: labels %v", name, s.Labels)
		}
		return s
	}
	for leaf, want := range map[string]struct{ ca, name string }{
		"sidecarset-apiserver-tls": {"sidecarset-serving-ca", "sidecarset-apiserver." + ns + ".svc"},
		"sidecarset-etcd-server":   {"sidecarset-etcd-ca", "sidecarset-etcd-1.sidecarset-etcd." + ns + ".svc"},
		"sidecarset-etcd-peer":     {"sidecarset-etcd-ca", "sidecarset-etcd-2.sidecarset-etcd." + ns + ".svc"},
		"sidecarset-etcd-client":   {"sidecarset-etcd-ca", ""},
	} {
		ca := secret(want.ca)
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(ca.Data["ca.crt"]) {
			t.Fatalf("Secret %s: no ca.crt", want.ca)
		}
		l := secret(leaf)
		block, _ := pem.Decode(l.Data["tls.crt"])
		if block == nil {
			t.Fatalf("Secret %s: no tls.crt", leaf)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: roots, DNSName: want.name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("Secret %s: its certificate does not verify against %s for %q: %v", leaf, want.ca, want.name, err)
		}
		if string(l.Data["ca.crt"]) != string(ca.Data["ca.crt"]) {
			t.Errorf("Secret %s: ca.crt is not %s's", leaf, want.ca)
		}
	}
	bundle := secret("sidecarset-serving-ca").Data["ca.crt"]
	for _, name := range []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io", "v1.admission.kruise.io"} {
		got, err := runKubectl(t, "", "get", "apiservice", name, "-o", "jsonpath={.spec.caBundle}")
		if err != nil {
			t.Fatal(err)
		}
		if got != base64.StdEncoding.EncodeToString(bundle) {
			t.Errorf("APIService %s: caBundle is not the serving CA's trust bundle", name)
		}
	}
	for _, p := range servers {
		c := p.Spec.Containers[0]
		if !slices.Contains(c.Args, fmt.Sprintf("--secure-port=%d", helmSecurePort)) || c.Ports[0].ContainerPort != helmSecurePort {
			t.Errorf("server pod %s: args %v, ports %v; want port %d", p.Name, c.Args, c.Ports, helmSecurePort)
		}
	}
}

// writeHelmValues writes the values the real node needs: the images node-deploy-images imported
// (never pulled), and its node selector and toleration for every pod the chart runs.
func writeHelmValues(t *testing.T) string {
	t.Helper()
	scheduling := map[string]interface{}{
		"nodeSelector": map[string]string{realNodeLabel: "true"},
		"tolerations":  []map[string]string{{"key": realNodeLabel, "operator": "Exists", "effect": "NoSchedule"}},
	}
	etcd := map[string]interface{}{
		"image":  map[string]string{"registry": "sidecarset.dev", "repository": "etcd", "tag": "local", "pullPolicy": "Never"},
		"backup": scheduling,
	}
	values := map[string]interface{}{
		"image":      map[string]string{"repository": "sidecarset.dev/sidecarset-apiserver", "tag": "local", "pullPolicy": "Never"},
		"etcd":       etcd,
		"securePort": helmSecurePort,
	}
	for k, v := range scheduling {
		values[k] = v
		etcd[k] = v
	}
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runHelm(helm string, args ...string) (string, error) {
	out, err := exec.Command(helm, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// kruiseRelease is the ownership of another Helm release (OpenKruise's) that kruise-system carries
// while the test runs.
var kruiseRelease = map[string]string{"meta.helm.sh/release-name": "kruise", "meta.helm.sh/release-namespace": "kruise-system"}

// ownKruiseSystem labels and annotates kruise-system as owned by the Helm release kruise, as
// OpenKruise's chart leaves it, until the test ends.
func ownKruiseSystem(t *testing.T) {
	t.Helper()
	ensureNamespace(t, "kruise-system")
	patch := func(labels, annotations map[string]interface{}) {
		data, _ := yaml.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"labels": labels, "annotations": annotations}})
		body, err := yaml.YAMLToJSON(data)
		if err == nil {
			_, err = kube.CoreV1().Namespaces().Patch(context.Background(), "kruise-system", types.MergePatchType, body, metav1.PatchOptions{})
		}
		if err != nil {
			t.Errorf("patch namespace kruise-system: %v", err)
		}
	}
	annotations := map[string]interface{}{}
	for k, v := range kruiseRelease {
		annotations[k] = v
	}
	patch(map[string]interface{}{"app.kubernetes.io/managed-by": "Helm"}, annotations)
	t.Cleanup(func() {
		none := map[string]interface{}{}
		for k := range kruiseRelease {
			none[k] = nil
		}
		patch(map[string]interface{}{"app.kubernetes.io/managed-by": nil}, none)
	})
}

// checkKruiseSystemOwned: the other release's namespace is still there, still its.
func checkKruiseSystemOwned(t *testing.T) {
	t.Helper()
	n, err := kube.CoreV1().Namespaces().Get(context.Background(), "kruise-system", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace kruise-system: %v", err)
	}
	for k, v := range kruiseRelease {
		if n.Annotations[k] != v {
			t.Errorf("namespace kruise-system: annotation %s is %q, want %q (another release's)", k, n.Annotations[k], v)
		}
	}
	if n.DeletionTimestamp != nil {
		t.Error("namespace kruise-system is being deleted")
	}
}

// deleteOutsideNamespace deletes what the local cluster applied for its own server under the names
// the chart renders outside its namespace (cluster-scoped objects, the RoleBinding in
// kube-system): Helm refuses to install over objects it does not own. hack/local-up.sh
// start-server applies them again.
func deleteOutsideNamespace(t *testing.T, helm, ns string, args []string) {
	t.Helper()
	out, err := exec.Command(helm, append([]string{"template", "sidecarset", filepath.Join(root, chart.Dir)}, args...)...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := chart.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for k, o := range objs {
		if k.Namespace == ns {
			continue
		}
		data, err := yaml.Marshal(map[string]interface{}{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
			"metadata": map[string]interface{}{"name": o.GetName(), "namespace": o.GetNamespace()}})
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	if out, err := runKubectl(t, strings.Join(docs, "---\n"), "delete", "--ignore-not-found", "--wait=true", "-f", "-"); err != nil {
		t.Fatalf("kubectl delete of the chart's objects outside %s: %v\n%s", ns, err, out)
	}
}

func waitAPIServices(t *testing.T, ns string) {
	t.Helper()
	for _, name := range []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io", "v1.admission.kruise.io"} {
		if out, err := runKubectl(t, "", "wait", "--for=condition=Available", "--timeout=120s", "apiservice/"+name); err != nil {
			t.Fatalf("APIService %s: %v\n%s", name, err, out)
		}
		as, err := runKubectl(t, "", "get", "apiservice", name, "-o", "jsonpath={.spec.service.namespace}/{.spec.service.name}:{.spec.service.port}")
		if err != nil || as != ns+"/sidecarset-apiserver:443" {
			t.Fatalf("APIService %s routes to %q (%v), want the installed Service", name, as, err)
		}
	}
}

// helmUpgradeWhileInjecting runs `helm upgrade --reset-then-reuse-values --set logLevel=4` (as
// docs/install.md upgrades), which rolls the server's Deployment, while pods the SidecarSet
// rn-helm selects are created (dry run, every 200 ms): none may be refused or admitted without its
// sidecar. It returns once both new replicas are ready with the new flag.
func helmUpgradeWhileInjecting(t *testing.T, helm, pkg, ns string, args []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		creates int
		failed  []string
	}
	done := make(chan result)
	var creates atomic.Int64
	go func() {
		var r result
		pace := time.NewTicker(200 * time.Millisecond)
		defer pace.Stop()
		for i := 0; ctx.Err() == nil; i++ {
			p := realPod(fmt.Sprintf("rn-helm-upgrade-%d", i), "rn-helm")
			got, err := kube.CoreV1().Pods(realNodeNamespace).Create(context.Background(), p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			r.creates++
			creates.Add(1)
			switch {
			case err != nil:
				r.failed = append(r.failed, fmt.Sprintf("%s: %v", p.Name, err))
			case !hasContainer(got, "sidecar1"):
				r.failed = append(r.failed, p.Name+": admitted without sidecar1")
			}
			select {
			case <-ctx.Done():
			case <-pace.C:
			}
		}
		done <- r
	}()
	upgraded := time.Now()
	out, err := runHelm(helm, append([]string{"upgrade", "sidecarset", pkg, "--reset-then-reuse-values", "--set", "logLevel=4"}, args...)...)
	if err != nil {
		cancel()
		<-done
		t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	if out, err := runKubectl(t, "", "-n", ns, "rollout", "status", "deployment/sidecarset-apiserver", "--timeout=5m"); err != nil {
		cancel()
		<-done
		t.Fatalf("rollout after helm upgrade: %v\n%s", err, out)
	}
	servers := waitReady(t, ns, "app=sidecarset-apiserver", 2, 3*time.Minute)
	waitAPIServices(t, ns)
	since := creates.Load()
	eventually(t, "10 pod creates against the new replicas alone", time.Minute, func(context.Context) (bool, string) {
		return creates.Load()-since >= 10, fmt.Sprintf("%d creates", creates.Load()-since)
	})
	cancel()
	r := <-done
	t.Logf("helm upgrade to the new replicas ready: %v, %d pod creates meanwhile", time.Since(upgraded).Round(time.Second), r.creates)
	if len(r.failed) > 0 {
		t.Errorf("%d of %d pod creates during the upgrade failed or were not injected:\n%s", len(r.failed), r.creates, strings.Join(r.failed, "\n"))
	}
	for _, p := range servers {
		if !slices.Contains(p.Spec.Containers[0].Args, "--v=4") {
			t.Errorf("server pod %s runs with %v, not the upgraded --v=4", p.Name, p.Spec.Containers[0].Args)
		}
	}
}

// checkDataKept: after helm uninstall, etcd's claims and the backup claim are still there and
// bound, and each member's data directory still holds its database on the local volume.
func checkDataKept(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range []string{"data-sidecarset-etcd-0", "data-sidecarset-etcd-1", "data-sidecarset-etcd-2", "sidecarset-etcd-backup"} {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("claim %s after helm uninstall: %v", name, err)
			continue
		}
		if pvc.DeletionTimestamp != nil || pvc.Status.Phase != corev1.ClaimBound {
			t.Errorf("claim %s after helm uninstall: phase %s, deleting %v", name, pvc.Status.Phase, pvc.DeletionTimestamp != nil)
		}
	}
	for i := 0; i < 3; i++ {
		db := filepath.Join(localState(), fmt.Sprintf("node/deploy-volumes/etcd-%d/data/member/snap/db", i))
		if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
			t.Errorf("etcd member %d's database after helm uninstall: %v", i, err)
		}
	}
}
