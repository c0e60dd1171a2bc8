package rollout

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// This file holds the per-pod predicates of a rollout (OpenKruise §5.2, §5.5, §5.6), with one
// deliberate difference: whether a container finished an in-place upgrade is decided by its
// restart and the pod's observedGeneration, not only by an imageID change.

// Managed reports whether the SidecarSet manages pod: the pod is active, lists the SidecarSet in
// its injected-list annotation, and has every container of the current spec (both twins and a
// working-container entry for a hot-upgrade sidecar).
func Managed(ss *v1alpha1.SidecarSet, pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if !injectedListHas(pod.Annotations[sidecar.InjectedListAnnotation], ss.Name) {
		return false
	}
	var working map[string]string
	for i := range ss.Spec.Containers {
		sc := &ss.Spec.Containers[i]
		if !sidecar.IsHotUpgrade(sc) {
			if podContainer(pod.Spec.Containers, sc.Name) == nil {
				return false
			}
			continue
		}
		if working == nil {
			working = sidecar.WorkingContainers(pod.Annotations)
		}
		n1, n2 := sidecar.HotUpgradeNames(sc.Name)
		if _, ok := working[sc.Name]; !ok || podContainer(pod.Spec.Containers, n1) == nil || podContainer(pod.Spec.Containers, n2) == nil {
			return false
		}
	}
	return true
}

// injectedListHas is sidecar.InjectedListHas without allocating: whether the comma-separated
// list names sidecarSetName.
func injectedListHas(list, sidecarSetName string) bool {
	if sidecarSetName == "" {
		return false
	}
	for list != "" {
		var n string
		n, list, _ = strings.Cut(list, ",")
		if n == sidecarSetName {
			return true
		}
	}
	return false
}

func podContainer(list []corev1.Container, name string) *corev1.Container {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// ContainerUpgraded reports whether pod container c runs what its spec says after the in-place
// upgrades of SidecarSet sidecarSetName:
//   - its status reports the spec image (up to registry defaults), or the spec pins a digest the
//     status imageID carries: done;
//   - else, with a recorded pre-upgrade state: done once the container restarted (containerID or
//     restartCount changed; for a record holding only an imageID, as OpenKruise writes, once the
//     imageID changed) and the pod's status.observedGeneration, when reported, is past the
//     generation recorded before the upgrade;
//   - without a record: done (nothing of ours is pending; OpenKruise's rule).
//
// A container without a status is not done.
func ContainerUpgraded(pod *corev1.Pod, sidecarSetName, c string) bool {
	return newPodState(pod, sidecarSetName).upgraded(c)
}

// podState evaluates one pod's containers, decoding its in-place update record at most once.
type podState struct {
	pod     *corev1.Pod
	ssName  string
	decoded bool
	record  []sidecar.RecordedContainer
	bad     bool // the record annotation is malformed
}

func newPodState(pod *corev1.Pod, sidecarSetName string) *podState {
	return &podState{pod: pod, ssName: sidecarSetName}
}

func (s *podState) upgraded(c string) bool {
	spec := sidecar.FindPodContainer(s.pod, c)
	if spec == nil {
		return true
	}
	st := sidecar.ContainerStatus(s.pod, c)
	if st == nil {
		return false
	}
	if SameImage(spec.Image, st.Image) || digestMatches(spec.Image, st.ImageID) {
		return true
	}
	rec, ok := s.recorded(c)
	if s.bad {
		return false // OpenKruise: an unparsable record is inconsistent
	}
	if !ok {
		return true
	}
	return restarted(rec, st) && s.generationCovers(rec)
}

func (s *podState) recorded(c string) (sidecar.InPlaceUpdateContainerStatus, bool) {
	if !s.decoded {
		s.decoded = true
		if v := s.pod.Annotations[sidecar.InPlaceUpdateStateAnnotation]; v != "" {
			var err error
			s.record, err = sidecar.LookupInPlaceUpdate(v, s.ssName)
			s.bad = err != nil
		}
	}
	for i := range s.record {
		if s.record[i].Name == c {
			return s.record[i].Status, true
		}
	}
	return sidecar.InPlaceUpdateContainerStatus{}, false
}

// restarted reports whether the container status shows a container started after rec was taken.
func restarted(rec sidecar.InPlaceUpdateContainerStatus, st *corev1.ContainerStatus) bool {
	if rec.ContainerID == "" && rec.RestartCount == 0 && rec.PodGeneration == 0 {
		return rec.ImageID != st.ImageID // an OpenKruise record
	}
	return st.RestartCount > rec.RestartCount || (st.ContainerID != "" && st.ContainerID != rec.ContainerID)
}

// generationCovers reports whether the kubelet has seen the pod spec written after rec: its
// status.observedGeneration is past the recorded generation. Kubelets that do not report it
// (observedGeneration 0) are trusted on the restart alone.
func (s *podState) generationCovers(rec sidecar.InPlaceUpdateContainerStatus) bool {
	observed := s.pod.Status.ObservedGeneration
	return observed == 0 || rec.PodGeneration == 0 || observed > rec.PodGeneration
}

// SameImage reports whether a spec image and a status image name the same image, allowing for
// the registry defaults a runtime adds (docker.io, library/, :latest).
func SameImage(spec, status string) bool {
	return spec == status || normalizeImage(spec) == normalizeImage(status)
}

func normalizeImage(image string) string {
	for _, prefix := range []string{"docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"} {
		if strings.HasPrefix(image, prefix) {
			image = image[len(prefix):]
			break
		}
	}
	if strings.Contains(image, "@") {
		return image
	}
	if i := strings.LastIndexByte(image, ':'); i < 0 || strings.Contains(image[i:], "/") {
		image += ":latest"
	}
	return image
}

// digestMatches reports whether a digest-pinned spec image (repo@sha256:...) has the digest of
// the status imageID (whatever its scheme prefix).
func digestMatches(spec, imageID string) bool {
	i := strings.LastIndexByte(spec, '@')
	if i < 0 || imageID == "" {
		return false
	}
	return strings.HasSuffix(imageID, spec[i:])
}

// waitingFailure returns the reason and container of a sidecar container that waits on a failure
// (image pull, crash loop, container creation), or "".
func waitingFailure(pod *corev1.Pod, names []string) (reason, container string) {
	for _, n := range names {
		st := sidecar.ContainerStatus(pod, n)
		if st == nil || st.State.Waiting == nil {
			continue
		}
		switch r := st.State.Waiting.Reason; r {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
			"CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError":
			return r, n
		}
	}
	return "", ""
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return pod.Status.Conditions[i].Status == corev1.ConditionTrue
		}
	}
	return false
}
