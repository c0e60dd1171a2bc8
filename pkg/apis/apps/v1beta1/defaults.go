package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_SidecarSet applies the same decode-time defaults as v1alpha1 (OpenKruise's two
// versions default alike): update strategy, container policies, Kubernetes' container and volume
// defaults, revision history limit, patch policy and injection revision policy.
func SetDefaults_SidecarSet(obj *SidecarSet) {
	s := &obj.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = RollingUpdateSidecarSetStrategyType
	}
	if s.MaxUnavailable == nil {
		s.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	if s.Partition == nil {
		s.Partition = ptr.To(intstr.FromInt32(0))
	}
	for i := range obj.Spec.InitContainers {
		setDefaultsSidecarContainer(&obj.Spec.InitContainers[i], AfterAppContainerType)
	}
	for i := range obj.Spec.Containers {
		setDefaultsSidecarContainer(&obj.Spec.Containers[i], BeforeAppContainerType)
	}
	for i := range obj.Spec.Volumes {
		v1alpha1.SetDefaultsVolume(&obj.Spec.Volumes[i])
	}
	if obj.Spec.RevisionHistoryLimit == nil {
		obj.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	for i := range obj.Spec.PatchPodMetadata {
		if obj.Spec.PatchPodMetadata[i].PatchPolicy == "" {
			obj.Spec.PatchPodMetadata[i].PatchPolicy = SidecarSetRetainPatchPolicy
		}
	}
	if r := obj.Spec.InjectionStrategy.Revision; r != nil && r.Policy == "" {
		r.Policy = AlwaysSidecarSetInjectRevisionPolicy
	}
}

func setDefaultsSidecarContainer(c *SidecarContainer, policy PodInjectPolicyType) {
	if c.PodInjectPolicy == "" {
		c.PodInjectPolicy = policy
	}
	if c.UpgradeStrategy.UpgradeType == "" {
		c.UpgradeStrategy.UpgradeType = SidecarContainerColdUpgrade
	}
	if c.ShareVolumePolicy.Type == "" {
		c.ShareVolumePolicy.Type = ShareVolumePolicyDisabled
	}
	if c.ResourcesPolicy != nil && c.ResourcesPolicy.TargetContainersNameRegex == nil {
		c.ResourcesPolicy.TargetContainersNameRegex = ptr.To(".*") // OpenKruise's CRD default
	}
	for i := range c.TransferEnv {
		if f := c.TransferEnv[i].SourceContainerNameFrom; f != nil && f.FieldRef != nil && f.FieldRef.APIVersion == "" {
			f.FieldRef.APIVersion = "v1"
		}
	}
	v1alpha1.SetDefaultsContainer(&c.Container)
}
