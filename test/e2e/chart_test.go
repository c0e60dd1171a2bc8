package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sidecarset/apiserver/test/chart"
)

// TestChartDryRun renders the Helm chart charts/sidecarset-apiserver as an operator would (helm
// from hack/install-helm.sh, certificates from hack/deploy-certs.sh) and has the cluster's
// kube-apiserver validate every object (apply --dry-run=server), as TestDeployManifests does for
// the kustomization rendered from it. It renders into the server's namespace, which the local
// cluster has (a dry run creates no namespace). The cert-manager variant is only rendered: the
// local cluster has no cert-manager CRDs.
func TestChartDryRun(t *testing.T) {
	parallelTest(t)
	manifest, err := chart.Render(root, filepath.Join(t.TempDir(), "certs"), "--namespace", serverNamespace)
	if err != nil {
		t.Fatal(err)
	}
	checkEtcd(t, "the chart", string(manifest))
	if out, err := runKubectl(t, string(manifest), "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("helm template | kubectl apply --dry-run=server -f -: %v\n%s", err, out)
	} else {
		t.Logf("dry run:\n%s", out)
	}

	cm, err := chart.Render(root, filepath.Join(t.TempDir(), "certs"), "--set", "certificates.source=cert-manager")
	if err != nil {
		t.Fatal(err)
	}
	checkEtcd(t, "the chart with cert-manager", string(cm))
	if !strings.Contains(string(cm), "kind: Certificate") || strings.Contains(string(cm), "kind: Secret") {
		t.Error("the chart with certificates.source=cert-manager renders no Certificate, or a Secret")
	}
}
