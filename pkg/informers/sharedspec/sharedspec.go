// Package sharedspec keeps in memory one copy of the spec that a SidecarSet and the revision
// recording it both hold. The server's informers cache every SidecarSet and every revision, and a
// revision records its SidecarSet's containers, init containers, volumes, image pull secrets and
// pod metadata patches (revision.Snapshot): without sharing, the caches hold each current spec
// twice, and every status write brings one more decoded copy. Sharer.Share, run by the informers
// on each object before it is cached, points a revision's recorded spec at its SidecarSet's, and
// a SidecarSet's at the one of its latest revision, wherever they are equal. Cached objects are
// only ever read (a writer deep-copies first), so the objects may share them.
package sharedspec

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Sharer shares specs between the objects of two caches: the SidecarSets, keyed by name, and the
// SidecarSetRevisions, keyed by name. Set both with Watch before the informers start.
type Sharer struct {
	sets, revisions cache.KeyGetter
}

// Watch sets the caches the shared specs are taken from.
func (s *Sharer) Watch(sets, revisions cache.KeyGetter) {
	s.sets, s.revisions = sets, revisions
}

// Share returns obj, a SidecarSet or a revision about to be cached, its recorded spec pointing at
// the equal one already cached in the other object, if any; any other object as it is.
func (s *Sharer) Share(obj any) any {
	switch o := obj.(type) {
	case *v1alpha1.SidecarSetRevision:
		if ss, ok := get[*v1alpha1.SidecarSet](s.sets, o.SidecarSetName); ok {
			ShareRevision(o, ss)
		}
	case *v1alpha1.SidecarSet:
		if r, ok := get[*v1alpha1.SidecarSetRevision](s.revisions, o.Status.LatestRevision); ok {
			ShareSidecarSet(o, r)
		}
	}
	return obj
}

// get returns the cached object of type T under key, if any.
func get[T any](from cache.KeyGetter, key string) (T, bool) {
	var zero T
	if from == nil || key == "" {
		return zero, false
	}
	obj, exists, err := from.GetByKey(key)
	if err != nil || !exists {
		return zero, false
	}
	t, ok := obj.(T)
	return t, ok
}

// ShareRevision points r's recorded spec at ss's when they are equal, and reports whether it did.
func ShareRevision(r *v1alpha1.SidecarSetRevision, ss *v1alpha1.SidecarSet) bool {
	spec := recorded(ss)
	if !apiequality.Semantic.DeepEqual(r.Spec, spec) {
		return false
	}
	r.Spec = spec
	return true
}

// ShareSidecarSet points the parts of ss a revision records at r's when they are equal, and
// reports whether it did.
func ShareSidecarSet(ss *v1alpha1.SidecarSet, r *v1alpha1.SidecarSetRevision) bool {
	if !apiequality.Semantic.DeepEqual(recorded(ss), r.Spec) {
		return false
	}
	ss.Spec.InitContainers, ss.Spec.Containers, ss.Spec.Volumes = r.Spec.InitContainers, r.Spec.Containers, r.Spec.Volumes
	ss.Spec.ImagePullSecrets, ss.Spec.PatchPodMetadata = r.Spec.ImagePullSecrets, r.Spec.PatchPodMetadata
	return true
}

// recorded returns the parts of ss a revision records, not copied.
func recorded(ss *v1alpha1.SidecarSet) v1alpha1.SidecarSetRevisionSpec {
	return v1alpha1.SidecarSetRevisionSpec{
		InitContainers:   ss.Spec.InitContainers,
		Containers:       ss.Spec.Containers,
		Volumes:          ss.Spec.Volumes,
		ImagePullSecrets: ss.Spec.ImagePullSecrets,
		PatchPodMetadata: ss.Spec.PatchPodMetadata,
	}
}
