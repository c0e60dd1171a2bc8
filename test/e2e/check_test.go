package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	Installed bool `json:"installed"`
	Checks    []struct{ Name, Status, Message string }
}

func runCheck(t *testing.T) (checkOutput, string, error) {
	t.Helper()
	out, errOut, err := plugin(t, "check", "-o", "json")
	var report checkOutput
	if jerr := json.Unmarshal([]byte(out), &report); jerr != nil {
		t.Fatalf("check -o json: %v\n%s%s", jerr, out, errOut)
	}
	return report, out + errOut, err
}

func (c checkOutput) status(name string) (string, string) {
	for _, r := range c.Checks {
		if r.Name == name {
			return r.Status, r.Message
		}
	}
	return "", ""
}

// TestCheck: on the installed local cluster every check passes (exit 0); with OpenKruise's
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
	for _, name := range []string{"openkruise-crds", "apiservices", "storage", "webhooks", "version", "certificates"} {
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
	status, msg := report.status("openkruise-crds")
	if err == nil || status != "error" || !strings.Contains(msg, "hides every kind of apps.kruise.io") ||
		!strings.Contains(msg, "apps.kruise.io/v1alpha1 CloneSet (clonesets.apps.kruise.io") {
		t.Errorf("check beside OpenKruise's CloneSet: exit %v, %s %q; want exit 1 and the CloneSet named\n%s", err, status, msg, out)
	}
	if status, _ := report.status("apiservices"); status != "ok" {
		t.Errorf("the CRDs changed the APIServices: %s", status)
	}

	if out, err := runKubectl(t, "", "delete", "crd", "clonesets.apps.kruise.io"); err != nil {
		t.Fatalf("deleting the CloneSet CRD: %v\n%s", err, out)
	}
	if last, ok := pollEvery(time.Second, 30*time.Second, func(context.Context) (bool, string) {
		report, out, err = runCheck(t)
		status, msg = report.status("openkruise-crds")
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
		status, msg = report.status("openkruise-features")
		return err == nil && status == "warning" && strings.Contains(msg, want), fmt.Sprintf("exit %v, %s %q\n%s", err, status, msg, out)
	}); !ok {
		t.Errorf("waited 60s for check to exit 0 with a warning %q; last seen: %s", want, last)
	}
}
