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
// the kustomization rendered from it, by default and with the values for managed clusters. It
// renders into the server's namespace, which the local cluster has (a dry run creates no
// namespace). The default, self-managed certificates, is validated the same way (etcd's init
// container and sidecar, the certificate guards' CEL). The cert-manager variant is only rendered:
// the local cluster has no cert-manager CRDs.
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

	// The values for managed clusters (docs/managed-clusters.md), each validated by kube-apiserver.
	for name, values := range map[string][]string{
		"the host network": {"hostNetwork=true", "securePort=10443"},
		"port 443, OpenShift's securityContexts, a PriorityClass": {"securePort=443", "podSecurityContext.runAsNonRoot=true",
			"podSecurityContext.seccompProfile.type=RuntimeDefault", "etcd.podSecurityContext.runAsNonRoot=true",
			"etcd.podSecurityContext.seccompProfile.type=RuntimeDefault", "priorityClass.create=true",
			"extraEnv[0].name=GOMEMLIMIT", "extraEnv[0].value=900MiB", "extraVolumes[0].name=corp-ca",
			"extraVolumes[0].configMap.name=corp-ca", "extraVolumeMounts[0].name=corp-ca", "extraVolumeMounts[0].mountPath=/etc/corp-ca"},
	} {
		args := []string{"--namespace", serverNamespace}
		for _, v := range values {
			args = append(args, "--set", v)
		}
		manifest, err := chart.Render(root, filepath.Join(t.TempDir(), "certs"), args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out, err := runKubectl(t, string(manifest), "apply", "--dry-run=server", "-f", "-"); err != nil {
			t.Errorf("%s: helm template | kubectl apply --dry-run=server -f -: %v\n%s", name, err, out)
		}
	}

	helm, err := chart.Helm(root)
	if err != nil {
		t.Fatal(err)
	}
	self, err := chart.Template(helm, root, "--namespace", serverNamespace)
	if err != nil {
		t.Fatal(err)
	}
	checkEtcd(t, "the chart with self-managed certificates", string(self))
	if out, err := runKubectl(t, string(self), "apply", "--dry-run=server", "-f", "-"); err != nil {
		t.Fatalf("helm template (self-managed) | kubectl apply --dry-run=server -f -: %v\n%s", err, out)
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
