package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// TestCRDDefaults: every default OpenKruise's SidecarSet CRD (v1alpha1 schema) declares, and the
// defaults its webhook applies, one case each.
func TestCRDDefaults(t *testing.T) {
	base := func() *SidecarSet {
		ss := &SidecarSet{}
		ss.Spec.Containers = []SidecarContainer{{Container: corev1.Container{Name: "c", Image: "busybox:1"}}}
		ss.Spec.InitContainers = []SidecarContainer{{Container: corev1.Container{Name: "i", Image: "busybox:1"}}}
		return ss
	}
	for _, tc := range []struct {
		name  string
		edit  func(*SidecarSet)
		check func(*SidecarSet) bool
	}{
		{"containers[].resourcesPolicy.targetContainersNameRegex = .* (CRD)", func(ss *SidecarSet) {
			ss.Spec.Containers[0].ResourcesPolicy = &ResourcesPolicy{TargetContainersMode: "sum"}
		}, func(ss *SidecarSet) bool {
			return ss.Spec.Containers[0].ResourcesPolicy.TargetContainersNameRegex != nil && *ss.Spec.Containers[0].ResourcesPolicy.TargetContainersNameRegex == ".*"
		}},
		{"initContainers[].resourcesPolicy.targetContainersNameRegex = .* (CRD)", func(ss *SidecarSet) {
			ss.Spec.InitContainers[0].ResourcesPolicy = &ResourcesPolicy{TargetContainersMode: "max"}
		}, func(ss *SidecarSet) bool {
			return ss.Spec.InitContainers[0].ResourcesPolicy.TargetContainersNameRegex != nil && *ss.Spec.InitContainers[0].ResourcesPolicy.TargetContainersNameRegex == ".*"
		}},
		{"an explicit targetContainersNameRegex is kept", func(ss *SidecarSet) {
			ss.Spec.Containers[0].ResourcesPolicy = &ResourcesPolicy{TargetContainersMode: "sum", TargetContainersNameRegex: ptr.To("^app$")}
		}, func(ss *SidecarSet) bool {
			return *ss.Spec.Containers[0].ResourcesPolicy.TargetContainersNameRegex == "^app$"
		}},
		{"an explicit empty targetContainersNameRegex stays empty (validation refuses it)", func(ss *SidecarSet) {
			ss.Spec.Containers[0].ResourcesPolicy = &ResourcesPolicy{TargetContainersMode: "sum", TargetContainersNameRegex: ptr.To("")}
		}, func(ss *SidecarSet) bool {
			return *ss.Spec.Containers[0].ResourcesPolicy.TargetContainersNameRegex == ""
		}},
		{"injectionStrategy.revision.policy = Always (CRD)", func(ss *SidecarSet) {
			v := "v1"
			ss.Spec.InjectionStrategy.Revision = &SidecarSetInjectRevision{CustomVersion: &v}
		}, func(ss *SidecarSet) bool {
			return ss.Spec.InjectionStrategy.Revision.Policy == AlwaysSidecarSetInjectRevisionPolicy
		}},
		{"updateStrategy: RollingUpdate, maxUnavailable 1, partition 0", nil, func(ss *SidecarSet) bool {
			u := ss.Spec.UpdateStrategy
			return u.Type == RollingUpdateSidecarSetStrategyType && *u.MaxUnavailable == intstr.FromInt32(1) && *u.Partition == intstr.FromInt32(0)
		}},
		{"revisionHistoryLimit 10", nil, func(ss *SidecarSet) bool { return *ss.Spec.RevisionHistoryLimit == 10 }},
		{"podInjectPolicy: containers BeforeAppContainer, initContainers AfterAppContainer", nil, func(ss *SidecarSet) bool {
			return ss.Spec.Containers[0].PodInjectPolicy == BeforeAppContainerType && ss.Spec.InitContainers[0].PodInjectPolicy == AfterAppContainerType
		}},
		{"upgradeType ColdUpgrade, shareVolumePolicy disabled", nil, func(ss *SidecarSet) bool {
			c := ss.Spec.Containers[0]
			return c.UpgradeStrategy.UpgradeType == SidecarContainerColdUpgrade && c.ShareVolumePolicy.Type == ShareVolumePolicyDisabled
		}},
		{"patchPodMetadata patchPolicy Retain", func(ss *SidecarSet) {
			ss.Spec.PatchPodMetadata = []SidecarSetPatchPodMetadata{{Annotations: map[string]string{"a": "b"}}}
		}, func(ss *SidecarSet) bool {
			return ss.Spec.PatchPodMetadata[0].PatchPolicy == SidecarSetRetainPatchPolicy
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := base()
			if tc.edit != nil {
				tc.edit(ss)
			}
			SetDefaults_SidecarSet(ss)
			if !tc.check(ss) {
				t.Errorf("default not applied: %+v", ss.Spec)
			}
		})
	}
}
