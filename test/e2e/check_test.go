package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// openKruiseCRDs are OpenKruise's CloneSet and SidecarSet CRDs as it installs them (group
// apps.kruise.io; CloneSet at v1alpha1, SidecarSet at v1alpha1 and v1beta1), schemas left open.
const openKruiseCRDs = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: clonesets.apps.kruise.io
spec:
  group: apps.kruise.io
  names: {kind: CloneSet, listKind: CloneSetList, plural: clonesets, singular: cloneset, shortNames: [clone]}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas, labelSelectorPath: .status.labelSelector}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sidecarsets.apps.kruise.io
spec:
  group: apps.kruise.io
  names: {kind: SidecarSet, listKind: SidecarSetList, plural: sidecarsets, singular: sidecarset}
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
  - name: v1beta1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources: {status: {}}
`

type checkOutput struct {
	Pre       bool `json:"pre"`
	Installed bool `json:"installed"`
	Checks    []struct{ Category, Name, Status, Message, Hint, Docs string }
}

func runCheck(t *testing.T, args ...string) (checkOutput, string, error) {
	t.Helper()
	out, errOut, err := plugin(t, append([]string{"check", "-o", "json"}, args...)...)
	var report checkOutput
	if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
		t.Fatalf("check -o json: %v\n%s%s", jerr, out, errOut)
	}
	return report, out + errOut, err
}

// find returns the finding of check name.
func (c checkOutput) find(name string) (category, hint, docs string) {
	for _, r := range c.Checks {
		if r.Name == name {
			return r.Category, r.Hint, r.Docs
		}
	}
	return "", "", ""
}

func (c checkOutput) status(name string) (string, string) {
	for _, r := range c.Checks {
		if r.Name == name {
			return r.Status, r.Message
		}
	}
	return "", ""
}

// TestCheck: on the installed local cluster every check passes (exit 0), the plugin and the server
// built from the same checkout (no version skew); with OpenKruise's
// CloneSet CRD beside it, check reports the kind hidden by the server's APIServices and exits 1,
// while OpenKruise's SidecarSet alone is only a warning.
func TestCheck(t *testing.T) {
	var report checkOutput
	var out string
	var err error
	// Every second: each try runs the plugin. SidecarSets of earlier tests may still be settling.
	eventuallyEvery(t, "check to pass on the installed cluster", time.Second, 60*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t)
		return err == nil, fmt.Sprintf("%v\n%s", err, out)
	})
	for _, name := range []string{v1alpha1.FindingOpenKruiseCRDs, v1alpha1.FindingAPIServices, v1alpha1.FindingStorage, v1alpha1.FindingWebhooks, v1alpha1.FindingVersion, v1alpha1.FindingVersionSkew, v1alpha1.FindingCertificates} {
		if status, msg := report.status(name); status != "ok" || !report.Installed {
			t.Errorf("check %s: %s %q (installed %v), want ok", name, status, msg, report.Installed)
		}
	}

	t.Cleanup(func() {
		if out, err := runKubectl(t, openKruiseCRDs, "delete", "--ignore-not-found", "--wait=false", "-f", "-"); err != nil {
			t.Errorf("deleting the CRDs: %v\n%s", err, out)
		}
	})
	if out, err := runKubectl(t, openKruiseCRDs, "apply", "-f", "-"); err != nil {
		t.Fatalf("OpenKruise's CRDs: %v\n%s", err, out)
	}
	report, out, err = runCheck(t)
	status, msg := report.status(v1alpha1.FindingOpenKruiseCRDs)
	if err == nil || status != "error" || !strings.Contains(msg, "hides every kind of apps.kruise.io") ||
		!strings.Contains(msg, "apps.kruise.io/v1alpha1 CloneSet (clonesets.apps.kruise.io") {
		t.Errorf("check beside OpenKruise's CloneSet: exit %v, %s %q; want exit 1 and the CloneSet named\n%s", err, status, msg, out)
	}
	if status, _ := report.status(v1alpha1.FindingAPIServices); status != "ok" {
		t.Errorf("the CRDs changed the APIServices: %s", status)
	}

	if out, err := runKubectl(t, "", "delete", "crd", "clonesets.apps.kruise.io"); err != nil {
		t.Fatalf("deleting the CloneSet CRD: %v\n%s", err, out)
	}
	if last, ok := pollEvery(time.Second, 30*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t)
		status, msg = report.status(v1alpha1.FindingOpenKruiseCRDs)
		return err == nil && status == "warning", fmt.Sprintf("exit %v, %s %q\n%s", err, status, msg, out)
	}); !ok {
		t.Errorf("waited 30s for check beside OpenKruise's SidecarSet only to exit 0 with a warning; last seen: %s", last)
	}
	if !strings.Contains(msg, "SidecarSet (sidecarsets.apps.kruise.io") {
		t.Errorf("the warning does not name OpenKruise's SidecarSet CRD: %q", msg)
	}

	// A SidecarSet asking for OpenKruise's container launch priority: a warning naming it, exit 0.
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "e2e-check-launch-priority"}, Spec: v1alpha1.SidecarSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-check-launch-priority": "1"}},
		Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "first", Image: "busybox:1.36",
			Env: []corev1.EnvVar{{Name: "KRUISE_CONTAINER_PRIORITY", Value: "1"}}}}},
	}}
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(context.Background(), ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sidecars.AppsV1alpha1().SidecarSets().Delete(context.Background(), ss.Name, metav1.DeleteOptions{})
	})
	want := "e2e-check-launch-priority: container launch priority (spec.containers[first].env[KRUISE_CONTAINER_PRIORITY])"
	if last, ok := pollEvery(time.Second, 60*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t)
		status, msg = report.status(v1alpha1.FindingOpenKruiseFeatures)
		return err == nil && status == "warning" && strings.Contains(msg, want), fmt.Sprintf("exit %v, %s %q\n%s", err, status, msg, out)
	}); !ok {
		t.Errorf("waited 60s for check to exit 0 with a warning %q; last seen: %s", want, last)
	}
}

// openKruiseWebhooks are webhook configurations named as OpenKruise's, without webhooks (they
// intercept nothing).
const openKruiseWebhooks = `
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: kruise-mutating-webhook-configuration
webhooks: []
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: kruise-validating-webhook-configuration
webhooks: []
`

// openKruiseManager is a Deployment named as OpenKruise's manager, scaled to zero.
const openKruiseManager = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: kruise-controller-manager
  namespace: kruise-system
spec:
  replicas: 0
  selector: {matchLabels: {control-plane: e2e-fake-kruise-manager}}
  template:
    metadata: {labels: {control-plane: e2e-fake-kruise-manager}}
    spec: {containers: [{name: manager, image: e2e.invalid/kruise-manager:v1}]}
`

// TestCheckPre: check --pre on a cluster with OpenKruise's CRDs and webhook configurations (fake
// ones, created here) reports the kinds the server's APIServices would hide and the webhooks left
// behind without a manager, each with a hint and a docs anchor, and exits 1; with a manager, the
// webhooks are a warning. Serial: other tests expect check to pass.
func TestCheckPre(t *testing.T) {
	t.Cleanup(func() {
		for _, manifest := range []string{openKruiseManager, openKruiseWebhooks, openKruiseCRDs} {
			if out, err := runKubectl(t, manifest, "delete", "--ignore-not-found", "-f", "-"); err != nil {
				t.Errorf("cleanup: %v\n%s", err, out)
			}
		}
	})
	var report checkOutput
	var out string
	var err error
	// Every second: TestCheck's CRDs may still be being deleted.
	eventuallyEvery(t, "check --pre to pass on the clean cluster", time.Second, 60*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t, "--pre")
		return exitCode(err) == 0 && report.Pre, fmt.Sprintf("exit %d (pre %v)\n%s", exitCode(err), report.Pre, out)
	})
	for _, name := range []string{v1alpha1.FindingKubernetesVersion, v1alpha1.FindingPolicyAPI, v1alpha1.FindingOpenKruiseCRDs, v1alpha1.FindingOpenKruiseWebhooks, v1alpha1.FindingOpenKruiseManager, v1alpha1.FindingAPIServiceConflicts} {
		if status, msg := report.status(name); status != "ok" && (name != v1alpha1.FindingOpenKruiseCRDs || status != "warning") {
			t.Errorf("check --pre %s: %s %q, want ok", name, status, msg)
		}
	}
	if status, _ := report.status(v1alpha1.FindingAPIServices); status != "" {
		t.Errorf("check --pre ran the post-install check apiservices: %s", status)
	}

	for _, manifest := range []string{openKruiseCRDs, openKruiseWebhooks} {
		if out, err := runKubectl(t, manifest, "apply", "-f", "-"); err != nil {
			t.Fatalf("OpenKruise's objects: %v\n%s", err, out)
		}
	}
	if last, ok := pollEvery(time.Second, 30*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t, "--pre")
		crds, _ := report.status(v1alpha1.FindingOpenKruiseCRDs)
		hooks, _ := report.status(v1alpha1.FindingOpenKruiseWebhooks)
		return exitCode(err) == 1 && crds == "error" && hooks == "error", fmt.Sprintf("exit %d, crds %s, webhooks %s\n%s", exitCode(err), crds, hooks, out)
	}); !ok {
		t.Fatalf("check --pre beside OpenKruise's CRDs and webhooks: want exit 1 with both errors; last seen: %s", last)
	}
	status, msg := report.status(v1alpha1.FindingOpenKruiseWebhooks)
	category, hint, docs := report.find(v1alpha1.FindingOpenKruiseWebhooks)
	if !strings.Contains(msg, "kruise-mutating-webhook-configuration") || !strings.Contains(msg, "without OpenKruise's manager") ||
		category != "openkruise" || hint == "" || !strings.HasSuffix(docs, "docs/plugin.md#openkruise") {
		t.Errorf("openkruise-webhooks: %s %q category %q hint %q docs %q", status, msg, category, hint, docs)
	}
	if _, msg := report.status(v1alpha1.FindingOpenKruiseCRDs); !strings.Contains(msg, "would hide every kind of apps.kruise.io") && !strings.Contains(msg, "hides every kind") {
		t.Errorf("openkruise-crds: %q does not say the kinds are hidden", msg)
	}

	ensureNamespace(t, "kruise-system") // OpenKruise's, which the local cluster does not have
	if out, err := runKubectl(t, openKruiseManager, "apply", "-f", "-"); err != nil {
		t.Fatalf("OpenKruise's manager: %v\n%s", err, out)
	}
	report, out, _ = runCheck(t, "--pre")
	if status, msg := report.status(v1alpha1.FindingOpenKruiseManager); status != "warning" || !strings.Contains(msg, "kruise-system/kruise-controller-manager") {
		t.Errorf("openkruise-manager with the Deployment: %s %q, want a warning naming it\n%s", status, msg, out)
	}
	if status, _ := report.status(v1alpha1.FindingOpenKruiseWebhooks); status != "warning" {
		t.Errorf("openkruise-webhooks beside a manager: %s, want warning", status)
	}
}

// TestCheckNamespaceEditor: a namespace editor (the edit ClusterRole in one namespace) runs check:
// it reports what it could read, the cluster-wide reads it may not make as skipped, and exits 0 or
// 1, never 2.
func TestCheckNamespaceEditor(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	const ns, user = "e2e-check-editor", "e2e-check-editor"
	setNamespace(t, ns, nil)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "editor", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := kube.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })

	var report checkOutput
	var out string
	var err error
	// Every second: the server caches authorization decisions for a few seconds.
	eventuallyEvery(t, "check as a namespace editor to skip the APIServices", time.Second, 30*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t, "--as", user, "-n", ns)
		status, _ := report.status(v1alpha1.FindingAPIServices)
		return status == "skipped", fmt.Sprintf("exit %d, apiservices %s\n%s", exitCode(err), status, out)
	})
	if code := exitCode(err); code != 0 && code != 1 {
		t.Errorf("check as a namespace editor: exit %d, want 0 or 1\n%s", code, out)
	}
	if !report.Installed {
		t.Errorf("check as a namespace editor does not see the server installed (discovery)\n%s", out)
	}
	skipped := 0
	for _, c := range report.Checks {
		if c.Status == "skipped" {
			skipped++
			if c.Category == "" || c.Docs == "" {
				t.Errorf("skipped %s: no category or docs anchor", c.Name)
			}
			if c.Hint == "" {
				t.Errorf("skipped %s: message %q hint %q", c.Name, c.Message, c.Hint)
			}
		}
	}
	if status, msg := report.status(v1alpha1.FindingAPIServices); status != "skipped" || !strings.Contains(msg, "not allowed to read apiservices") {
		t.Errorf("apiservices as a namespace editor: %s %q, want skipped: not allowed", status, msg)
	}
	if status, msg := report.status(v1alpha1.FindingKubernetesVersion); status != "ok" {
		t.Errorf("kubernetes-version as a namespace editor: %s %q, want ok (discovery is open to every user)", status, msg)
	}
	t.Logf("check as a namespace editor: exit %d, %d skipped\n%s", exitCode(err), skipped, out)
}
