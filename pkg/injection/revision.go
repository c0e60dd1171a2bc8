package injection

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// view is the version of a SidecarSet chosen for a pod: the current object's metadata with the
// injection-relevant spec of either the latest spec or a recorded revision. Its slices alias the
// SidecarSet or revision and are read only.
type view struct {
	ss                 *v1alpha1.SidecarSet
	initContainers     []v1alpha1.SidecarContainer
	containers         []v1alpha1.SidecarContainer
	volumes            []corev1.Volume
	imagePullSecrets   []corev1.LocalObjectReference
	patchPodMetadata   []v1alpha1.SidecarSetPatchPodMetadata
	hash               string
	hashWithoutImage   string
	controllerRevision string
	latest             bool
	reason             Reason
}

func latestView(ss *v1alpha1.SidecarSet) (view, error) {
	v := view{
		ss:                 ss,
		initContainers:     ss.Spec.InitContainers,
		containers:         ss.Spec.Containers,
		volumes:            ss.Spec.Volumes,
		imagePullSecrets:   ss.Spec.ImagePullSecrets,
		patchPodMetadata:   ss.Spec.PatchPodMetadata,
		hash:               ss.Annotations[sidecar.HashAnnotation],
		hashWithoutImage:   ss.Annotations[sidecar.HashWithoutImageAnnotation],
		controllerRevision: ss.Status.LatestRevision,
		latest:             true,
	}
	return v, v.fillHashes()
}

func historyView(ss *v1alpha1.SidecarSet, rev *v1alpha1.SidecarSetRevision, reason Reason) (view, error) {
	v := view{
		ss:                 ss,
		initContainers:     rev.Spec.InitContainers,
		containers:         rev.Spec.Containers,
		volumes:            rev.Spec.Volumes,
		imagePullSecrets:   rev.Spec.ImagePullSecrets,
		patchPodMetadata:   rev.Spec.PatchPodMetadata,
		hash:               rev.Annotations[sidecar.HashAnnotation],
		hashWithoutImage:   rev.Annotations[sidecar.HashWithoutImageAnnotation],
		controllerRevision: rev.Name,
		reason:             reason,
	}
	return v, v.fillHashes()
}

// fillHashes computes the hashes when the object lacks its annotations (the server always stamps
// them; OpenKruise recomputes them for revisions without annotations).
func (v *view) fillHashes() error {
	if v.hash != "" && v.hashWithoutImage != "" {
		return nil
	}
	h, err := hash.Of(&v1alpha1.SidecarSetSpec{Containers: v.containers, InitContainers: v.initContainers})
	if err != nil {
		return newError(v.ss.Name, "spec.containers", err)
	}
	if v.hash == "" {
		v.hash = h.WithImage
	}
	if v.hashWithoutImage == "" {
		v.hashWithoutImage = h.WithoutImage
	}
	return nil
}

// chooseVersion implements OpenKruise's revision selection for a pod being created (§4.3).
func chooseVersion(ss *v1alpha1.SidecarSet, pod *corev1.Pod, in *Input) (view, error) {
	rev := ss.Spec.InjectionStrategy.Revision
	if rev == nil || (rev.RevisionName == nil && rev.CustomVersion == nil) {
		return latestView(ss)
	}
	history, err := lookupRevision(ss, rev, in.Revisions)
	if err != nil {
		return view{}, err
	}
	if history == nil {
		return latestView(ss)
	}
	strategy := &ss.Spec.UpdateStrategy
	if strategy.Paused || rev.Policy != v1alpha1.PartialSidecarSetInjectRevisionPolicy {
		return historyView(ss, history, ReasonRevisionPinned)
	}
	if strategy.Selector != nil {
		ok, err := apps.SelectorMatches(strategy.Selector, pod.Labels)
		if err != nil {
			return view{}, newError(ss.Name, "spec.updateStrategy.selector", err)
		}
		if !ok {
			return historyView(ss, history, ReasonRevisionPinned)
		}
	}
	return choosePartial(ss, history, strategy.Partition, pod, in.Rand)
}

func lookupRevision(ss *v1alpha1.SidecarSet, rev *v1alpha1.SidecarSetInjectRevision, src RevisionSource) (*v1alpha1.SidecarSetRevision, error) {
	field := "spec.injectionStrategy.revision.customVersion"
	if rev.RevisionName != nil {
		field = "spec.injectionStrategy.revision.revisionName"
	}
	if src == nil {
		return nil, newError(ss.Name, field, errors.New("no revision source to resolve the revision"))
	}
	var (
		r   *v1alpha1.SidecarSetRevision
		err error
	)
	if rev.RevisionName != nil {
		r, err = src.Revision(*rev.RevisionName)
	} else {
		r, err = src.LatestWithCustomVersion(ss.Name, *rev.CustomVersion)
	}
	if err != nil {
		return nil, newError(ss.Name, field, fmt.Errorf("cannot find the revision to inject: %w", err))
	}
	return r, nil
}

// choosePartial picks between the latest spec and history for a pod the Partial policy may
// update: an int (or absent) partition means latest; a percentage p% picks history with
// probability p/100. A pod that already carries one of the two versions (webhook reinvocation)
// keeps it.
func choosePartial(ss *v1alpha1.SidecarSet, history *v1alpha1.SidecarSetRevision, partition *intstr.IntOrString,
	pod *corev1.Pod, random func() float64) (view, error) {
	latest, err := latestView(ss)
	if err != nil {
		return view{}, err
	}
	if partition == nil || partition.Type == intstr.Int {
		return latest, nil
	}
	pct, err := apps.ParsePercent(partition.StrVal)
	if err != nil {
		return view{}, newError(ss.Name, "spec.updateStrategy.partition", err)
	}
	probability := pct / 100
	old, err := historyView(ss, history, ReasonPartialRandom)
	if err != nil {
		return view{}, err
	}
	if e, ok := sidecar.PodHashEntry(pod.Annotations, sidecar.HashAnnotation, ss.Name); ok {
		switch e.Hash {
		case latest.hash:
			latest.reason = ReasonPartialSticky
			return latest, nil
		case old.hash:
			old.reason = ReasonPartialSticky
			return old, nil
		}
	}
	if random == nil {
		return view{}, errors.New("injection: Input.Rand is required to draw against a percentage partition")
	}
	if random() <= probability {
		return old, nil
	}
	latest.reason = ReasonPartialRandom
	return latest, nil
}
