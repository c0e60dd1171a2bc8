package injection

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestCanaryOverridesBaseInjectedEarlier: a base injected earlier in the admission (by a policy
// compiled before its canary existed) is taken out again when the webhook injects the canary: one
// envoy, the canary's, and the pod the webhook alone gives.
func TestCanaryOverridesBaseInjectedEarlier(t *testing.T) {
	other := mustSidecarSet(t, ss("a-logs", `  containers: [{name: logs, image: logs:1}]`))
	base := mustSidecarSet(t, ss("base", `
  containers: [{name: envoy, image: envoy:1, volumeMounts: [{name: envoy-config, mountPath: /etc/envoy}]}]
  volumes: [{name: envoy-config, emptyDir: {}}]`))
	canary := mustSidecarSet(t, `
metadata: {name: canary, annotations: {apps.kruise.io/sidecarset-canary: "true", apps.kruise.io/sidecarset-base: base}}
spec:
  selector: {matchLabels: {app: web}}
  updateStrategy: {type: NotUpdate}
  containers: [{name: envoy, image: envoy:2}]`)
	pod := mustPod(t, basicPod)

	byPolicies, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{other, base}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Inject(Input{Pod: byPolicies.Pod, SidecarSets: []*v1alpha1.SidecarSet{other, base, canary}, Now: testNow,
		Options: Options{SkipInjected: true}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"logs", "envoy", "app"}, names(got.Pod.Spec.Containers)); diff != "" {
		t.Errorf("containers (-want +got):\n%s", diff)
	}
	for _, c := range got.Pod.Spec.Containers {
		if c.Name == "envoy" && c.Image != "envoy:2" {
			t.Errorf("envoy image %s, want the canary's envoy:2", c.Image)
		}
	}
	if len(got.Pod.Spec.Volumes) != 0 {
		t.Errorf("volumes %v, want none (only the base's sidecar mounted envoy-config)", got.Pod.Spec.Volumes)
	}
	if l := got.Pod.Annotations[sidecar.InjectedListAnnotation]; l != "a-logs,canary" {
		t.Errorf("injected list %q, want a-logs,canary", l)
	}
	hashes, err := sidecar.ParseHashMap(got.Pod.Annotations[sidecar.HashAnnotation])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := hashes["base"]; ok {
		t.Errorf("hash annotation keeps the base: %v", hashes)
	}
	alone, err := Inject(Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{other, base, canary}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(alone.Pod, got.Pod); diff != "" {
		t.Errorf("pod differs from the webhook's alone (-alone +got):\n%s", diff)
	}
	want := map[string]Reason{"a-logs": ReasonAlreadyInjected, "base": ReasonOverriddenByCanary, "canary": ""}
	for _, d := range got.Decisions {
		if d.Reason != want[d.SidecarSet] {
			t.Errorf("%s: reason %q, want %q", d.SidecarSet, d.Reason, want[d.SidecarSet])
		}
	}
	again, err := Inject(Input{Pod: got.Pod, SidecarSets: []*v1alpha1.SidecarSet{other, base, canary}, Now: testNow, Options: Options{SkipInjected: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Patch) != 0 {
		t.Errorf("reinvocation patches %v, want nothing", again.Patch)
	}
	// The base's policy, run again after the webhook, puts its envoy back in place of the
	// canary's: the webhook's reinvocation gives the pod of the webhook alone again.
	rerun, err := Inject(Input{Pod: got.Pod, SidecarSets: []*v1alpha1.SidecarSet{base}, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	last, err := Inject(Input{Pod: rerun.Pod, SidecarSets: []*v1alpha1.SidecarSet{other, base, canary}, Now: testNow, Options: Options{SkipInjected: true}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(alone.Pod, last.Pod); diff != "" {
		t.Errorf("after the base's policy ran again, the pod differs from the webhook's alone (-alone +got):\n%s", diff)
	}
}
