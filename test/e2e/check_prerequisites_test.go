package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestCheckPrerequisites: check --pre on the local cluster reports the prerequisites as this
// cluster has them: the admin may make every create of the install, the cluster has no
// StorageClass (a warning; a class given that does not exist is an error, one that exists ok),
// kube-apiserver publishes the front-proxy CA (hack/local-up.sh starts it with
// --requestheader-client-ca-file), and cert-manager, when chosen, is not served (an error). A user
// without any role may make none of the creates (nor read the namespace, so the namespace's create is
// reviewed too): an error naming them.
func TestCheckPrerequisites(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	const class, missing, nobody = "e2e-check-prerequisites", "e2e-check-prerequisites-missing", "e2e-check-prerequisites-nobody"
	if list, err := kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) > 0 {
		t.Fatalf("the local cluster has StorageClasses (%v, %v): this test expects none but its own", list, err)
	}

	report, out, err := runCheck(t, "--pre")
	if exitCode(err) != 0 {
		t.Errorf("check --pre as the admin: exit %d, want 0 (warnings only)\n%s", exitCode(err), out)
	}
	for name, want := range map[string]struct{ status, msg string }{
		v1alpha1.FindingInstallerRBAC: {"ok", "you may make all 19 creates the installation makes"},
		v1alpha1.FindingStorageClass:  {"warning", "no default StorageClass (the cluster has: none): etcd's claims stay Pending"},
		v1alpha1.FindingFrontProxyCA:  {"ok", "requestheader-client-ca-file of ConfigMap kube-system/extension-apiserver-authentication"},
		v1alpha1.FindingCertManager:   {"ok", "not used: certificates from self-managed"},
	} {
		status, msg := report.status(name)
		category, hint, docs := report.find(name)
		if status != want.status || !strings.Contains(msg, want.msg) || category != "prerequisites" || !strings.HasSuffix(docs, "docs/plugin.md#prerequisites") {
			t.Errorf("check --pre %s: %s %q (category %q, docs %q), want %s with %q", name, status, msg, category, docs, want.status, want.msg)
		}
		if status != "ok" && hint == "" {
			t.Errorf("check --pre %s: %s without a hint", name, status)
		}
	}

	report, out, err = runCheck(t, "--pre", "--etcd-storage-class", missing)
	if status, msg := report.status(v1alpha1.FindingStorageClass); exitCode(err) != 1 || status != "error" || !strings.Contains(msg, `StorageClass "`+missing+`" (--etcd-storage-class) does not exist`) {
		t.Errorf("check --pre --etcd-storage-class %s: exit %d, %s %q; want exit 1 and an error naming it\n%s", missing, exitCode(err), status, msg, out)
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: "kubernetes.io/no-provisioner"}
	if _, err := kube.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = kube.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	report, out, _ = runCheck(t, "--pre", "--etcd-storage-class", class)
	if status, msg := report.status(v1alpha1.FindingStorageClass); status != "ok" || !strings.Contains(msg, `StorageClass "`+class+`" exists`) {
		t.Errorf("check --pre --etcd-storage-class %s (created): %s %q, want ok\n%s", class, status, msg, out)
	}

	report, out, err = runCheck(t, "--pre", "--certificates", "cert-manager")
	if status, msg := report.status(v1alpha1.FindingCertManager); exitCode(err) != 1 || status != "error" || !strings.Contains(msg, "the cluster serves no cert-manager.io/v1") {
		t.Errorf("check --pre --certificates cert-manager: exit %d, %s %q; want exit 1 and an error\n%s", exitCode(err), status, msg, out)
	}
	if status, msg := report.status(v1alpha1.FindingInstallerRBAC); status != "ok" || !strings.Contains(msg, "all 20 creates") {
		t.Errorf("check --pre --certificates cert-manager installer-rbac: %s %q, want ok with the Issuers and Certificates reviewed too", status, msg)
	}
	if out, errOut, err := plugin(t, "check", "--pre", "--certificates", "vault"); exitCode(err) != 2 || !strings.Contains(errOut, `--certificates: "vault" is not one of`) {
		t.Errorf("check --pre --certificates vault: exit %d, want 2 naming the flag\n%s%s", exitCode(err), out, errOut)
	}

	// Every second: the reviews are cheap, and a fresh user needs no setup.
	eventuallyEvery(t, "check --pre as a user without roles to deny every create", time.Second, 30*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t, "--pre", "--as", nobody)
		status, msg := report.status(v1alpha1.FindingInstallerRBAC)
		return exitCode(err) == 1 && status == "error" && strings.Contains(msg, "20 of 20 creates denied"), fmt.Sprintf("exit %d, %s %q\n%s", exitCode(err), status, msg, out)
	})
	_, msg := report.status(v1alpha1.FindingInstallerRBAC)
	for _, p := range []string{"create apiservices.apiregistration.k8s.io", "create mutatingwebhookconfigurations.admissionregistration.k8s.io",
		"create deployments.apps in sidecarset-system", "create rolebindings.rbac.authorization.k8s.io in kube-system"} {
		if !strings.Contains(msg, p) {
			t.Errorf("installer-rbac as %s: %q does not name %q", nobody, msg, p)
		}
	}
	if status, _ := report.status(v1alpha1.FindingFrontProxyCA); status != "skipped" {
		t.Errorf("front-proxy-ca as %s (who may not read the ConfigMap): %s, want skipped", nobody, status)
	}
}
