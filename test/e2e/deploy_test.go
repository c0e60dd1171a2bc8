package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sidecarset/apiserver/test/chart"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/controller/injectionsync"
	"github.com/sidecarset/apiserver/test/deploycheck"
)

// TestDeployManifests builds the production manifests as an operator would (certificates from
// hack/deploy-certs.sh, kubectl kustomize) and has the cluster's kube-apiserver validate every
// object (apply --dry-run=server). It checks the etcd StatefulSet for TLS and client certificate
// authentication, builds the cert-manager overlay (no dry run: the local cluster has no cert-manager
// CRDs) and the image and namespace example overlay.
func TestDeployManifests(t *testing.T) {
	dir := t.TempDir()
	// A copy without certs/ (an operator's certificates there must neither be used nor changed).
	for _, d := range []string{"artifacts/deploy", "artifacts/deploy-example"} {
		copyTree(t, filepath.Join(root, d), filepath.Join(dir, d), "certs")
	}
	deploy := filepath.Join(dir, "artifacts/deploy")
	certs := filepath.Join(deploy, "certs")

	deployCerts := func(args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(root, "hack/deploy-certs.sh"), append(args, certs)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hack/deploy-certs.sh: %v\n%s", err, out)
		}
	}
	deployCerts()
	first := readDir(t, certs)
	deployCerts() // idempotent
	if second := readDir(t, certs); !equalFiles(first, second) {
		t.Error("a second hack/deploy-certs.sh run changed the certificates")
	}
	for _, f := range []string{"etcd-ca.crt", "etcd-server.crt", "etcd-peer.crt", "etcd-client.crt", "serving-ca.crt", "apiserver.crt", "apiservices-ca-bundle.yaml"} {
		if len(first[f]) == 0 {
			t.Errorf("hack/deploy-certs.sh wrote no %s", f)
		}
	}

	built := kustomize(t, deploy)
	if strings.Contains(built, "CA_BUNDLE") {
		t.Error("the built manifest still holds the CA_BUNDLE placeholder")
	}
	checkEtcd(t, "artifacts/deploy", built)
	// OpenKruise's namespace, which its release owns during a migration (and `kubectl delete -k`
	// would delete), is nowhere in it.
	if strings.Contains(built, "kruise-system") {
		t.Error("the built manifest names kruise-system, OpenKruise's namespace")
	}
	for _, want := range []string{
		"--etcd-servers=https://sidecarset-etcd-0.sidecarset-etcd.$(POD_NAMESPACE).svc:2379,",
		"--etcd-certfile=", "--etcd-keyfile=", "--etcd-cafile=", "kind: NetworkPolicy", "kind: CronJob",
	} {
		if !strings.Contains(built, want) {
			t.Errorf("the built manifest has no %q", want)
		}
	}
	if out, err := runKubectl(t, built, "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply --dry-run=server -k artifacts/deploy: %v\n%s", err, out)
	} else {
		t.Logf("dry run:\n%s", out)
	}
	// The one-off maintenance Job of the README.
	if out, err := runKubectl(t, "", "create", "--dry-run=server", "-f", filepath.Join(root, "artifacts/deploy/maintenance/etcd-defrag.yaml")); err != nil {
		t.Errorf("kubectl create --dry-run=server -f artifacts/deploy/maintenance/etcd-defrag.yaml: %v\n%s", err, out)
	}

	cm := kustomize(t, filepath.Join(deploy, "overlays/cert-manager"))
	checkEtcd(t, "overlays/cert-manager", cm)
	for _, want := range []string{"kind: Certificate", "kind: Issuer", "cert-manager.io/inject-ca-from: " + serverNamespace + "/sidecarset-apiserver-tls",
		"secretName: sidecarset-etcd-peer", "secretName: sidecarset-etcd-server", "secretName: sidecarset-etcd-client", "secretName: sidecarset-apiserver-tls"} {
		if !strings.Contains(cm, want) {
			t.Errorf("the cert-manager overlay has no %q", want)
		}
	}
	if strings.Contains(cm, "caBundle") || strings.Contains(cm, "kind: Secret") {
		t.Error("the cert-manager overlay sets a caBundle or a Secret itself")
	}

	ex := kustomize(t, filepath.Join(dir, "artifacts/deploy-example"))
	checkEtcd(t, "artifacts/deploy-example", ex)
	if strings.Contains(ex, serverNamespace) {
		t.Errorf("the namespace example overlay left the base's namespace %s somewhere", serverNamespace)
	}
	for _, want := range []string{"image: registry.example.com/sidecarset-apiserver:v0.1.0", "name: sidecarset-apiserver-auth-reader\n  namespace: kube-system"} {
		if !strings.Contains(ex, want) {
			t.Errorf("the example overlay has no %q", want)
		}
	}
}

func kustomize(t *testing.T, dir string) string {
	t.Helper()
	out, err := exec.Command(kubectl, "kustomize", dir).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr)
	}
	return string(out)
}

func checkEtcd(t *testing.T, what, manifest string) {
	t.Helper()
	sts, err := deploycheck.FindStatefulSet([]byte(manifest), deploycheck.EtcdStatefulSetName)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := deploycheck.EtcdTLS(sts); err != nil {
		t.Errorf("%s: etcd accepts or offers insecure connections:\n%v", what, err)
	}
}

// copyTree copies the regular files under src to dst, leaving out top-level directories named skip.
func copyTree(t *testing.T, src, dst, skip string) {
	t.Helper()
	if err := chart.CopyTree(src, dst, skip); err != nil {
		t.Fatal(err)
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func equalFiles(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			return false
		}
	}
	return true
}

// TestDeployWhileServerCannotStart applies the shipped deployment, artifacts/deploy as it is (its
// certificates from hack/deploy-certs.sh), to the local cluster, where its server cannot start:
// the local server is stopped, etcd's claims find no volume, and whatever pods the nodes report
// running answer nothing. From the apply on, pod creates succeed in every namespace, selected by a
// stored SidecarSet or not: the shipped webhooks send no pod until a server has written its
// selection. `kubectl delete -k` then removes it all and the local server comes back.
func TestDeployWhileServerCannotStart(t *testing.T) {
	applyManualExample(t)
	// The local server is stopped below: first, until its policy serves the example, its own
	// webhooks still send the example's pods to it (the intake after the write, then the policy's
	// grace), and would keep doing so while it is down.
	waitWebhooksRelease(t, map[string]string{"app": "nginx"})
	ctx := context.Background()
	const ns = serverNamespace
	dir := t.TempDir()
	deploy := filepath.Join(dir, "deploy")
	copyTree(t, filepath.Join(root, "artifacts/deploy"), deploy, "certs")
	if out, err := exec.Command(filepath.Join(root, "hack/deploy-certs.sh"), filepath.Join(deploy, "certs")).CombinedOutput(); err != nil {
		t.Fatalf("hack/deploy-certs.sh: %v\n%s", err, out)
	}

	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := runKubectl(t, "", "delete", "-k", deploy, "--ignore-not-found", "--wait=true", "--timeout=180s"); err != nil {
			t.Errorf("kubectl delete -k: %v\n%s", err, out)
		}
		waitNamespaceGone(t, ns)
		if _, err := localUp("start-server"); err != nil {
			t.Errorf("the local server did not come back: %v", err)
		}
	})
	// The local registration's ExternalName Service has the deployed Service's name.
	if err := kube.CoreV1().Services(ns).Delete(ctx, "sidecarset-apiserver", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if out, err := runKubectl(t, "", "apply", "-k", deploy); err != nil {
		t.Fatalf("kubectl apply -k artifacts/deploy: %v\n%s", err, out)
	}
	extra := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-cannot-start-", Labels: map[string]string{"team": "e2e"}}}
	extra, err := kube.CoreV1().Namespaces().Create(ctx, extra, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), extra.Name, metav1.DeleteOptions{})
	})

	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// Until the deadline, through kube-apiserver's loading of what was applied and the pods the
	// deployment starts: a check that holds throughout 20 s, not a wait.
	consistently(t, "pods created while the deployed server cannot start", 2*time.Second, 20*time.Second, func(ctx context.Context) (bool, string) {
		for _, n := range []string{"default", "kube-system", ns, extra.Name} {
			for _, app := range []string{"nginx", "selected-by-none"} {
				pod := nginxPod(n, "cannot-start-"+app)
				pod.Labels = map[string]string{"app": app}
				if _, err := kube.CoreV1().Pods(n).Create(ctx, pod, dry); err != nil {
					return false, fmt.Sprintf("a pod (app=%s) in %s was refused: %v", app, n, err)
				}
			}
		}
		return true, ""
	})
	if out, err := runKubectl(t, "", "get", "apiservice", "v1alpha1.apps.kruise.io", "-o", "jsonpath={.status.conditions[?(@.type==\"Available\")].status}"); err != nil || out == "True" {
		t.Errorf("APIService v1alpha1.apps.kruise.io Available=%q (%v): the deployed server was meant not to run", out, err)
	}
}

// waitWebhooksRelease waits until no webhook of the server's active configuration that fails
// closed would be called for a pod with these labels in namespace default that declares no
// sidecar container itself: no intake webhook, and no selective webhook whose selectors take it
// without match conditions (those of a policy-served SidecarSet's webhook send only the pods that
// declare one of its containers).
func waitWebhooksRelease(t *testing.T, podLabels map[string]string) {
	t.Helper()
	eventually(t, fmt.Sprintf("the server's webhooks no longer take pods labelled %v", podLabels), time.Minute, func(ctx context.Context) (bool, string) {
		cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, injectionsync.ActiveWebhooks("sidecarset-injector"), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		ns := labels.Set{corev1.LabelMetadataName: "default"}
		for _, w := range cfg.Webhooks {
			if w.FailurePolicy != nil && *w.FailurePolicy == admissionregistrationv1.Ignore || len(w.MatchConditions) > 0 {
				continue
			}
			if selects(w.ObjectSelector, podLabels) && selects(w.NamespaceSelector, ns) {
				return false, fmt.Sprintf("webhook %s takes them", w.Name)
			}
		}
		return true, ""
	})
}

// selects reports whether a webhook's label selector (nil: everything) takes an object with these
// labels.
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil {
		return true
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}
