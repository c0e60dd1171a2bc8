package sidecar

import (
	"iter"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// IsNativeSidecar reports whether c is a Kubernetes native sidecar: an init container with
// restartPolicy Always.
func IsNativeSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// IsHotUpgrade reports whether sc is upgraded by hot upgrade (two twins) rather than restarted.
func IsHotUpgrade(sc *v1alpha1.SidecarContainer) bool {
	return sc.UpgradeStrategy.UpgradeType == v1alpha1.SidecarContainerHotUpgrade
}

// IsInjected reports whether the pod container c is an injected sidecar: it carries
// IS_INJECTED=true (the first IS_INJECTED var decides).
func IsInjected(c *corev1.Container) bool {
	e := findEnv(c.Env, InjectedEnv)
	return e != nil && e.Value == "true"
}

// HasTwins reports whether SidecarSet container sc becomes two pod containers, the hot-upgrade
// twins: it is a hot-upgrade sidecar, and not a plain init container (init says whether sc is one
// of the SidecarSet's initContainers; a native sidecar has twins).
func HasTwins(sc *v1alpha1.SidecarContainer, init bool) bool {
	return IsHotUpgrade(sc) && (!init || IsNativeSidecar(&sc.Container))
}

// HotUpgradeNames returns the names of the twins of hot-upgrade sidecar name: name-1, name-2.
func HotUpgradeNames(name string) (string, string) {
	return name + hotSuffix1, name + hotSuffix2
}

// IsTwinName reports, without allocating, whether pod container name is one of the twins of
// hot-upgrade sidecar sidecarName (see HotUpgradeNames).
func IsTwinName(name, sidecarName string) bool {
	rest, ok := strings.CutPrefix(name, sidecarName)
	return ok && (rest == hotSuffix1 || rest == hotSuffix2)
}

// RunningContainers yields the SidecarSet containers that keep running in a pod, in spec order:
// every container, then the native sidecars among the init containers (plain init containers run
// once, at start, and are injection only). These are the containers the hash annotation's
// sidecarList names and the ones an in-place upgrade may change. The pointers are into the given
// slices.
func RunningContainers(containers, initContainers []v1alpha1.SidecarContainer) iter.Seq[*v1alpha1.SidecarContainer] {
	return func(yield func(*v1alpha1.SidecarContainer) bool) {
		for i := range containers {
			if !yield(&containers[i]) {
				return
			}
		}
		for i := range initContainers {
			if IsNativeSidecar(&initContainers[i].Container) && !yield(&initContainers[i]) {
				return
			}
		}
	}
}

// VersionAnnotation returns the key of the version annotation of pod container name.
func VersionAnnotation(container string) string { return VersionAnnotationPrefix + container }

// VersionAltAnnotation returns the key of the versionalt annotation of pod container name.
func VersionAltAnnotation(container string) string { return VersionAltAnnotationPrefix + container }

// PodContainerNames returns the names of the pod containers SidecarSet container sc maps to:
// its own name, or its twins for a hot-upgrade sidecar (for an init container only when it is a
// native sidecar). init says whether sc is one of the SidecarSet's initContainers.
func PodContainerNames(sc *v1alpha1.SidecarContainer, init bool) []string {
	if !HasTwins(sc, init) {
		return []string{sc.Name}
	}
	n1, n2 := HotUpgradeNames(sc.Name)
	return []string{n1, n2}
}

// HotUpgradeContainers returns the working and the idle twin of hot-upgrade sidecar name
// according to the pod's WorkingHotUpgradeContainerAnnotation. As in OpenKruise, X-2 is taken as
// working unless the annotation names X-1.
func HotUpgradeContainers(name string, annotations map[string]string) (working, idle string) {
	return HotUpgradeTwins(name, WorkingContainers(annotations))
}

// HotUpgradeTwins is HotUpgradeContainers on the decoded working-container annotation.
func HotUpgradeTwins(name string, working map[string]string) (workingTwin, idle string) {
	return HotUpgradeTwinsOf(name, working[name])
}

// HotUpgradeTwinsOf is HotUpgradeTwins given the working container the annotation records for
// sidecar name ("" when none).
func HotUpgradeTwinsOf(name, working string) (workingTwin, idle string) {
	n1, n2 := HotUpgradeNames(name)
	if working == n1 {
		return n1, n2
	}
	return n2, n1
}

// HotUpgradeTarget chooses which twin of hot-upgrade sidecar sc receives a new image, and returns
// it with the other twin (OpenKruise §5.9): a twin running hotUpgradeEmptyImage (X-1 checked
// first); else, if exactly one twin is ready and consistent, the other one; else the idle twin.
// readyAndConsistent reports, for a pod container name, whether its status is ready and it runs
// its spec image.
func HotUpgradeTarget(sc *v1alpha1.SidecarContainer, pod *corev1.Pod, readyAndConsistent func(container string) bool) (target, other string) {
	n1, n2 := HotUpgradeNames(sc.Name)
	var img1, img2 string
	if c := FindPodContainer(pod, n1); c != nil {
		img1 = c.Image
	}
	if c := FindPodContainer(pod, n2); c != nil {
		img2 = c.Image
	}
	empty := sc.UpgradeStrategy.HotUpgradeEmptyImage
	switch {
	case img1 == empty:
		return n1, n2
	case img2 == empty:
		return n2, n1
	}
	r1, r2 := readyAndConsistent(n1), readyAndConsistent(n2)
	switch {
	case r1 && !r2:
		return n2, n1
	case !r1 && r2:
		return n1, n2
	}
	working, idle := HotUpgradeContainers(sc.Name, pod.Annotations)
	return idle, working
}

// FindPodContainer returns the pod container (regular, then init) named name, or nil.
func FindPodContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	return nil
}

// UpgradeContainer performs the in-place upgrade of SidecarSet container sc in pod, which the
// caller owns and which is modified in place: only the image of one pod container changes. It
// returns the name of the changed pod container, or "" when the pod already serves sc.Image or
// its target twin already has it (or the pod lacks the container).
//
// Cold upgrade: the container named sc.Name gets sc.Image. Hot upgrade: the twin chosen by
// HotUpgradeTarget gets sc.Image unless the other twin already runs it; then the twin becomes
// working in WorkingHotUpgradeContainerAnnotation, its version annotation becomes version (the
// SidecarSet resourceVersion), its versionalt the other twin's previous version, and the other
// twin's versionalt becomes version.
//
// The caller then refreshes the SidecarSet's HashAnnotation entry (SetHashEntry) and records the
// changed container's previous imageID (RecordInPlaceUpdate).
func UpgradeContainer(pod *corev1.Pod, sc *v1alpha1.SidecarContainer, version string, readyAndConsistent func(container string) bool) string {
	if !IsHotUpgrade(sc) {
		c := FindPodContainer(pod, sc.Name)
		if c == nil || c.Image == sc.Image {
			return ""
		}
		c.Image = sc.Image
		return c.Name
	}
	target, other := HotUpgradeTarget(sc, pod, readyAndConsistent)
	t, o := FindPodContainer(pod, target), FindPodContainer(pod, other)
	if t == nil || o == nil || o.Image == sc.Image || t.Image == sc.Image {
		return "" // served, or already on its way
	}
	t.Image = sc.Image
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	working := WorkingContainers(pod.Annotations)
	working[sc.Name] = target
	pod.Annotations[WorkingHotUpgradeContainerAnnotation] = RenderWorkingContainers(working)
	pod.Annotations[VersionAnnotation(target)] = version
	pod.Annotations[VersionAltAnnotation(target)] = pod.Annotations[VersionAnnotation(other)]
	pod.Annotations[VersionAltAnnotation(other)] = version
	return target
}

// ResetIdleTwin performs the reset step of hot-upgrade sidecar sc in pod, which the caller owns
// and which is modified in place: the idle twin gets hotUpgradeEmptyImage, its version annotation
// becomes "0" and the working twin's versionalt becomes "0". It returns the idle twin's name, or
// "" when it already runs the empty image (or is missing). The hash annotation is not touched.
func ResetIdleTwin(pod *corev1.Pod, sc *v1alpha1.SidecarContainer) string {
	working, idle := HotUpgradeContainers(sc.Name, pod.Annotations)
	c := FindPodContainer(pod, idle)
	if c == nil || c.Image == sc.UpgradeStrategy.HotUpgradeEmptyImage {
		return ""
	}
	c.Image = sc.UpgradeStrategy.HotUpgradeEmptyImage
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[VersionAnnotation(idle)] = "0"
	pod.Annotations[VersionAltAnnotation(working)] = "0"
	return idle
}
