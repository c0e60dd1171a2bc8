package rollout

import (
	"strings"

	"github.com/distribution/reference"
	"k8s.io/utils/lru"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// This file holds the per-pod predicates of a rollout (OpenKruise §5.2, §5.5, §5.6), with one
// deliberate difference: whether a container finished an in-place upgrade is decided by its
// restart and the pod's observedGeneration, not by an imageID change or a status image.

// MissedInjection reports whether pod, which the SidecarSet's selectors select, runs without the
// SidecarSet: it is active, the SidecarSet's injection is not paused, and the pod's injected-list
// does not name it. MissedCause says why.
func MissedInjection(ss *v1alpha1.SidecarSet, pod *Pod) bool {
	if !apps.PodActive(pod.Phase, pod.Deleting) {
		return false
	}
	return !ss.Spec.InjectionStrategy.Paused && !sidecar.InjectedListHas(pod.InjectedList(), ss.Name)
}

// Managed reports whether the SidecarSet manages pod: the pod is active, lists the SidecarSet in
// its injected-list annotation, and has every container of the current spec (both twins and a
// working-container entry for a hot-upgrade sidecar).
func Managed(ss *v1alpha1.SidecarSet, pod *Pod) bool {
	if !apps.PodActive(pod.Phase, pod.Deleting) {
		return false
	}
	if !sidecar.InjectedListHas(pod.InjectedList(), ss.Name) {
		return false
	}
	for i := range ss.Spec.Containers {
		sc := &ss.Spec.Containers[i]
		if !sidecar.IsHotUpgrade(sc) {
			if pod.regular(sc.Name) == nil {
				return false
			}
			continue
		}
		n1, n2 := sidecar.HotUpgradeNames(sc.Name)
		if _, ok := pod.Working(sc.Name); !ok || pod.regular(n1) == nil || pod.regular(n2) == nil {
			return false
		}
	}
	return true
}

// regular returns the regular container named name, or nil.
func (p *Pod) regular(name string) *Container {
	if c := p.Container(name); c != nil && !c.Init {
		return c
	}
	return nil
}

// statusesComplete reports whether every regular container has a status.
func (p *Pod) statusesComplete() bool {
	for i := range p.Containers {
		if c := &p.Containers[i]; !c.Init && !c.HasStatus {
			return false
		}
	}
	return true
}

// ContainerUpgraded reports whether pod container c runs what its spec says after the in-place
// upgrades of SidecarSet sidecarSetName:
//   - with a recorded pre-upgrade state (our record): done once the container restarted
//     (containerID or restartCount changed) and the pod's status.observedGeneration, when
//     reported, is past the generation recorded before the upgrade. The status image is no
//     evidence either way: containerd names a container's image by the first tag of its digest,
//     so the old container already shows the new tag when both tags share a digest, and runtimes
//     behind a mirror show a digest reference for the new one; and a kubelet reports the new
//     observedGeneration as soon as it sees the spec, before it replaces the container. Only the
//     restart tells that the new spec's container runs;
//   - with an OpenKruise record (an imageID only): done once the status reports the spec image
//     or the imageID changed (OpenKruise's rule);
//   - without a record: done (nothing of ours is pending; OpenKruise's rule).
//
// A container without a status is not done. A pod whose record does not decode is done only when
// the status reports the spec image.
func ContainerUpgraded(pod *Pod, sidecarSetName, c string) bool {
	ct := pod.Container(c)
	if ct == nil {
		return true
	}
	if !ct.HasStatus {
		return false
	}
	specImage := SameImage(ct.Image(), ct.StatusImage()) || digestMatches(ct.Image(), ct.ImageID())
	if pod.RecordsMalformed {
		return specImage // OpenKruise: an unparsable record is inconsistent
	}
	rec, ok := pod.Record(sidecarSetName, c)
	switch {
	case !ok:
		return true
	case rec.ImageIDOnly:
		return specImage || restarted(rec, ct)
	}
	return restarted(rec, ct) && generationCovers(pod, rec)
}

// ReadyAndUpgraded returns what an in-place upgrade reads of pod to choose the twin of a
// hot-upgrade sidecar (inplace.Upgrade): whether pod container c is ready and runs what its spec
// says after the in-place upgrades of SidecarSet sidecarSetName.
func ReadyAndUpgraded(pod *Pod, sidecarSetName string) func(c string) bool {
	return func(c string) bool {
		ct := pod.Container(c)
		return ct != nil && ct.HasStatus && ct.Ready && ContainerUpgraded(pod, sidecarSetName, c)
	}
}

// restarted reports whether the container shows an instance started after rec was taken.
func restarted(rec Record, ct *Container) bool {
	if rec.ImageIDOnly {
		return rec.imageID != ct.imageID // an OpenKruise record
	}
	return ct.RestartCount > rec.RestartCount || (ct.ContainerID != 0 && ct.ContainerID != rec.ContainerID)
}

// generationCovers reports whether the kubelet has seen the pod spec written after rec: its
// status.observedGeneration is past the recorded generation. Kubelets that do not report it
// (observedGeneration 0) are trusted on the restart alone.
func generationCovers(pod *Pod, rec Record) bool {
	observed := pod.ObservedGeneration
	return observed == 0 || rec.PodGeneration == 0 || observed > rec.PodGeneration
}

// SameImage reports whether a spec image and a status image name the same image, as the
// kubelet and containerd read references (github.com/distribution/reference): registry and
// library/ defaults, :latest, and a digest deciding over a tag. References that do not parse are
// compared as written.
func SameImage(spec, status string) bool {
	return spec == status || normalizeImage(spec) == normalizeImage(status)
}

// normalizedImages remembers normalizeImage's answers. A kubelet reports images as its runtime
// names them (docker.io/library/busybox:1.36 for busybox:1.36), so most comparisons parse both
// references, and parsing one is a regular expression: without it, parsing was two thirds of a
// plan over 10,000 pods (BenchmarkPlan10000). A cluster runs few distinct images; the bounds on
// entries and on their length (maxRememberedImage) keep what pods with ever new image names
// (any string a pod's author writes) can make it hold to a few megabytes.
var normalizedImages = lru.New(4096)

// maxRememberedImage is the longest image remembered: a reference names at most 255 characters,
// a tag 128, a digest about 100; a longer string is parsed each time.
const maxRememberedImage = 512

func normalizeImage(image string) string {
	if len(image) > maxRememberedImage {
		return parseImage(image)
	}
	if n, ok := normalizedImages.Get(image); ok {
		return n.(string)
	}
	n := parseImage(image)
	normalizedImages.Add(image, n)
	return n
}

// parseImage is normalizeImage without the memory.
func parseImage(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	if d, ok := named.(reference.Digested); ok {
		return named.Name() + "@" + d.Digest().String()
	}
	return reference.TagNameOnly(named).String()
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
func waitingFailure(pod *Pod, names []string) (reason, container string) {
	for _, n := range names {
		ct := pod.Container(n)
		if ct == nil {
			continue
		}
		switch r := ct.Waiting(); r {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
			"CrashLoopBackOff", "CreateContainerError", "CreateContainerConfigError", "RunContainerError":
			return r, n
		}
	}
	return "", ""
}
