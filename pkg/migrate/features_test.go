package migrate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReliances: the sidecars' variables and the patched pod annotations OpenKruise's launch
// priority and Job sidecar terminator act on, with the values they act on, in spec order; not
// those of init containers (OpenKruise reads them in a pod's containers only), nor other values.
func TestReliances(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec string
		want []Reliance
	}{
		{"none", "containers: [{name: log, image: a, env: [{name: LEVEL, value: debug}]}]", nil},
		{"launch priority env, any value", "containers: [{name: log, image: a, env: [{name: KRUISE_CONTAINER_PRIORITY, value: '0'}]}]",
			[]Reliance{{"spec.containers[log].env[KRUISE_CONTAINER_PRIORITY]", FeatureLaunchPriority}}},
		{"launch priority annotation Ordered", "patchPodMetadata: [{annotations: {a: b}}, {annotations: {apps.kruise.io/container-launch-priority: Ordered}, patchPolicy: Overwrite}]",
			[]Reliance{{"spec.patchPodMetadata[1].annotations[apps.kruise.io/container-launch-priority]", FeatureLaunchPriority}}},
		{"launch priority annotation, another value", "patchPodMetadata: [{annotations: {apps.kruise.io/container-launch-priority: Random}}]", nil},
		{"terminator, true in any case", "containers: [{name: proxy, image: a, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: 'True'}]}]",
			[]Reliance{{"spec.containers[proxy].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]", FeatureJobSidecarTerminator}}},
		{"terminator off", "containers: [{name: proxy, image: a, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: 'false'}]}]", nil},
		{"terminator with image", "containers: [{name: proxy, image: a, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE, value: exit:1}]}]",
			[]Reliance{{"spec.containers[proxy].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE]", FeatureJobSidecarTerminator}}},
		{"terminator with no image", "containers: [{name: proxy, image: a, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT_WITH_IMAGE, value: ''}]}]", nil},
		{"init containers are not read", "initContainers: [{name: init, image: a, env: [{name: KRUISE_CONTAINER_PRIORITY, value: '1'}, {name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: 'true'}]}]", nil},
		{"several, in spec order", `
  containers:
  - {name: a, image: a, env: [{name: KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT, value: 'true'}, {name: KRUISE_CONTAINER_PRIORITY, value: '10'}]}
  - {name: b, image: b, env: [{name: KRUISE_CONTAINER_PRIORITY, value: '-1'}]}
  patchPodMetadata: [{annotations: {apps.kruise.io/container-launch-priority: Ordered}}]`, []Reliance{
			{"spec.containers[a].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]", FeatureJobSidecarTerminator},
			{"spec.containers[a].env[KRUISE_CONTAINER_PRIORITY]", FeatureLaunchPriority},
			{"spec.containers[b].env[KRUISE_CONTAINER_PRIORITY]", FeatureLaunchPriority},
			{"spec.patchPodMetadata[0].annotations[apps.kruise.io/container-launch-priority]", FeatureLaunchPriority},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := sidecarSetFrom(t, "metadata: {name: s}\nspec:\n  "+tc.spec)
			if diff := cmp.Diff(tc.want, Reliances(&ss.Spec)); diff != "" {
				t.Errorf("Reliances (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDescribeReliances: one line per object, the features in the order first met, each with
// its fields and what changes after the cutover; nothing when there is none.
func TestDescribeReliances(t *testing.T) {
	for _, tc := range []struct {
		name string
		rs   []Reliance
		want string
	}{
		{"none", nil, ""},
		{"one", []Reliance{{"spec.containers[a].env[KRUISE_CONTAINER_PRIORITY]", FeatureLaunchPriority}},
			"SidecarSet s relies on OpenKruise features outside the SidecarSet API, which stop working after the cutover: " +
				"OpenKruise's container launch priority (spec.containers[a].env[KRUISE_CONTAINER_PRIORITY]): " + consequences[FeatureLaunchPriority]},
		{"two features, grouped", []Reliance{
			{"spec.containers[a].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]", FeatureJobSidecarTerminator},
			{"spec.containers[a].env[KRUISE_CONTAINER_PRIORITY]", FeatureLaunchPriority},
			{"spec.containers[b].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]", FeatureJobSidecarTerminator},
		}, "SidecarSet s relies on OpenKruise features outside the SidecarSet API, which stop working after the cutover: " +
			"OpenKruise's Job sidecar terminator (spec.containers[a].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT], spec.containers[b].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]): " +
			consequences[FeatureJobSidecarTerminator] + "; OpenKruise's container launch priority (spec.containers[a].env[KRUISE_CONTAINER_PRIORITY]): " +
			consequences[FeatureLaunchPriority]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DescribeReliances("SidecarSet s", tc.rs)); diff != "" {
				t.Errorf("DescribeReliances (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSummarizeReliances: the features in the order first met, each with its fields.
func TestSummarizeReliances(t *testing.T) {
	got := SummarizeReliances([]Reliance{
		{"spec.containers[a].env[KRUISE_CONTAINER_PRIORITY]", FeatureLaunchPriority},
		{"spec.containers[b].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]", FeatureJobSidecarTerminator},
		{"spec.patchPodMetadata[0].annotations[apps.kruise.io/container-launch-priority]", FeatureLaunchPriority},
	})
	want := "container launch priority (spec.containers[a].env[KRUISE_CONTAINER_PRIORITY], spec.patchPodMetadata[0].annotations[apps.kruise.io/container-launch-priority]), " +
		"Job sidecar terminator (spec.containers[b].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT])"
	if diff := cmp.Diff(want, SummarizeReliances(nil)+got); diff != "" {
		t.Errorf("SummarizeReliances (-want +got):\n%s", diff)
	}
}
