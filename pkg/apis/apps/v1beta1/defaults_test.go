package v1beta1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
)

// TestDefaultsMatchV1alpha1 decodes the same sparse SidecarSets at both versions: the defaulted
// internal objects are equal (OpenKruise defaults its two versions alike), and defaults applied.
func TestDefaultsMatchV1alpha1(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	decoder := serializer.NewCodecFactory(scheme).UniversalDecoder(apps.SchemeGroupVersion)
	tests := []struct {
		name  string
		spec  string
		check func(*apps.SidecarSet) string
	}{{
		name: "update strategy, container policies and container defaults",
		spec: `{"containers":[{"name":"c","image":"i"}],"initContainers":[{"name":"i","image":"i:1"}]}`,
		check: func(ss *apps.SidecarSet) string {
			c, i := ss.Spec.Containers[0], ss.Spec.InitContainers[0]
			if ss.Spec.UpdateStrategy.Type != apps.RollingUpdateSidecarSetStrategyType || ss.Spec.UpdateStrategy.MaxUnavailable.IntValue() != 1 ||
				*ss.Spec.RevisionHistoryLimit != 10 || c.PodInjectPolicy != apps.BeforeAppContainerType || i.PodInjectPolicy != apps.AfterAppContainerType ||
				c.ImagePullPolicy != "Always" || i.ImagePullPolicy != "IfNotPresent" || c.UpgradeStrategy.UpgradeType != apps.SidecarContainerColdUpgrade {
				return "defaults missing"
			}
			return ""
		},
	}, {
		name: "patch policy, injection revision policy, resources policy regex, transferEnv fieldRef, volumes",
		spec: `{"containers":[{"name":"c","image":"i","resourcesPolicy":{"targetContainersMode":"sum","resourcesExpr":{}},
			"transferEnv":[{"sourceContainerNameFrom":{"fieldRef":{"fieldPath":"metadata.name"}},"envNames":["A"]}]}],
			"volumes":[{"name":"v","configMap":{"name":"cm"}}],
			"patchPodMetadata":[{"annotations":{"a":"b"}}],"injectionStrategy":{"revision":{"revisionName":"r"}}}`,
		check: func(ss *apps.SidecarSet) string {
			c := ss.Spec.Containers[0]
			if ss.Spec.PatchPodMetadata[0].PatchPolicy != apps.SidecarSetRetainPatchPolicy ||
				ss.Spec.InjectionStrategy.Revision.Policy != apps.AlwaysSidecarSetInjectRevisionPolicy ||
				*c.ResourcesPolicy.TargetContainersNameRegex != ".*" || c.TransferEnv[0].SourceContainerNameFrom.FieldRef.APIVersion != "v1" ||
				*ss.Spec.Volumes[0].ConfigMap.DefaultMode != 0o644 {
				return "defaults missing"
			}
			return ""
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decode := func(version string) *apps.SidecarSet {
				doc := `{"apiVersion":"apps.kruise.io/` + version + `","kind":"SidecarSet","metadata":{"name":"d"},"spec":` + tc.spec + `}`
				obj, _, err := decoder.Decode([]byte(strings.TrimSpace(doc)), nil, nil)
				if err != nil {
					t.Fatalf("%s: %v", version, err)
				}
				return obj.(*apps.SidecarSet)
			}
			alpha, beta := decode("v1alpha1"), decode("v1beta1")
			if diff := cmp.Diff(alpha, beta); diff != "" {
				t.Errorf("defaulted objects differ (-v1alpha1 +v1beta1):\n%s", diff)
			}
			if msg := tc.check(beta); msg != "" {
				t.Errorf("v1beta1: %s: %+v", msg, beta.Spec)
			}
		})
	}
}
