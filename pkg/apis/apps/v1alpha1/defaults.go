package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func addDefaultingFuncs(scheme *runtime.Scheme) error {
	return RegisterDefaults(scheme)
}

// SetDefaults_SidecarSet applies the SidecarSet defaults at decode time: the update strategy, the
// container policies, Kubernetes' own container and volume defaults (they feed the spec hashes, so
// they match what kube-apiserver would apply), the revision history limit, the patch policy and
// the injection revision policy.
func SetDefaults_SidecarSet(obj *SidecarSet) { setDefaultsSpec(&obj.Spec) }

// SetDefaults_NamespacedSidecarSet applies the same defaults as SetDefaults_SidecarSet.
func SetDefaults_NamespacedSidecarSet(obj *NamespacedSidecarSet) { setDefaultsSpec(&obj.Spec) }

func setDefaultsSpec(spec *SidecarSetSpec) {
	setDefaultsUpdateStrategy(&spec.UpdateStrategy)
	for i := range spec.InitContainers {
		setDefaultsSidecarContainer(&spec.InitContainers[i], AfterAppContainerType)
	}
	for i := range spec.Containers {
		setDefaultsSidecarContainer(&spec.Containers[i], BeforeAppContainerType)
	}
	for i := range spec.Volumes {
		SetDefaultsVolume(&spec.Volumes[i])
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	for i := range spec.PatchPodMetadata {
		if spec.PatchPodMetadata[i].PatchPolicy == "" {
			spec.PatchPodMetadata[i].PatchPolicy = SidecarSetRetainPatchPolicy
		}
	}
	if r := spec.InjectionStrategy.Revision; r != nil && r.Policy == "" {
		r.Policy = AlwaysSidecarSetInjectRevisionPolicy
	}
}

func setDefaultsUpdateStrategy(s *SidecarSetUpdateStrategy) {
	if s.Type == "" {
		s.Type = RollingUpdateSidecarSetStrategyType
	}
	if s.MaxUnavailable == nil {
		s.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	if s.Partition == nil {
		s.Partition = ptr.To(intstr.FromInt32(0))
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
		if from := c.TransferEnv[i].SourceContainerNameFrom; from != nil {
			setDefaultsFieldSelector(from.FieldRef)
		}
	}
	SetDefaultsContainer(&c.Container)
}

// SetDefaultsContainer applies kube-apiserver's container defaults that OpenKruise applies to
// sidecar containers: pull policy by tag, termination message, port protocol, fieldRef API
// versions, milli-rounded quantities, liveness/readiness probe and lifecycle handler defaults.
func SetDefaultsContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if from := c.Env[i].ValueFrom; from != nil {
			setDefaultsFieldSelector(from.FieldRef)
		}
	}
	roundUpToMilli(c.Resources.Limits)
	roundUpToMilli(c.Resources.Requests)
	setDefaultsProbe(c.LivenessProbe)
	setDefaultsProbe(c.ReadinessProbe)
	if c.Lifecycle != nil {
		setDefaultsLifecycleHandler(c.Lifecycle.PostStart)
		setDefaultsLifecycleHandler(c.Lifecycle.PreStop)
	}
}

// imageTag returns the tag of an image reference: "latest" when it has neither tag nor digest,
// "" when it has only a digest.
func imageTag(image string) string {
	name, _, hasDigest := strings.Cut(image, "@")
	lastSlash := strings.LastIndex(name, "/")
	if i := strings.LastIndex(name, ":"); i > lastSlash {
		return name[i+1:]
	}
	if hasDigest {
		return ""
	}
	return "latest"
}

func setDefaultsFieldSelector(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func roundUpToMilli(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func setDefaultsProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setDefaultsHTTPGet(p.HTTPGet)
}

func setDefaultsLifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		setDefaultsHTTPGet(h.HTTPGet)
	}
}

func setDefaultsHTTPGet(a *corev1.HTTPGetAction) {
	if a == nil {
		return
	}
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

// SetDefaultsVolume applies kube-apiserver's pod volume defaults: a volume without a source is an
// emptyDir, file modes default to 0644, fieldRefs to v1, token projections to one hour.
func SetDefaultsVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if isEmptyVolumeSource(src) {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := src.DownwardAPI; d != nil {
		if d.DefaultMode == nil {
			d.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		for i := range d.Items {
			setDefaultsFieldSelector(d.Items[i].FieldRef)
		}
	}
	if p := src.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			setDefaultsProjection(&p.Sources[i])
		}
	}
}

func setDefaultsProjection(s *corev1.VolumeProjection) {
	if s.DownwardAPI != nil {
		for i := range s.DownwardAPI.Items {
			setDefaultsFieldSelector(s.DownwardAPI.Items[i].FieldRef)
		}
	}
	if t := s.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
		t.ExpirationSeconds = ptr.To[int64](3600)
	}
}

func isEmptyVolumeSource(src *corev1.VolumeSource) bool {
	return *src == corev1.VolumeSource{}
}
