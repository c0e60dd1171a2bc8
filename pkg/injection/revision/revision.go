// Package revision resolves the SidecarSetRevision that a SidecarSet's injectionStrategy.revision
// names, from a SidecarSetRevision lister. Pod injection (the webhook, and kubectl sidecarset
// inject against a cluster) and the SidecarSet cross-validation plugin, which requires the
// revision to exist when the SidecarSet is written, look revisions up through it, so they agree
// on what exists and say so in the same words.
package revision

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	listers "github.com/sidecarset/apiserver/pkg/generated/listers/apps/v1alpha1"
)

// Lister resolves revisions from a SidecarSetRevision lister; it is the injector's
// injection.RevisionSource.
type Lister struct {
	Revisions listers.SidecarSetRevisionLister
}

// Revision returns the revision with this name (of any SidecarSet, as in OpenKruise).
func (l Lister) Revision(name string) (*v1alpha1.SidecarSetRevision, error) {
	return l.Revisions.Get(name)
}

// LatestWithCustomVersion returns the revision of SidecarSet sidecarSet with the highest number
// among those labelled apps.kruise.io/sidecarset-custom-version=version, and an error when there
// is none.
func (l Lister) LatestWithCustomVersion(sidecarSet, version string) (*v1alpha1.SidecarSetRevision, error) {
	revs, err := l.Revisions.List(labels.SelectorFromSet(labels.Set{
		v1alpha1.SidecarSetNameLabel:          sidecarSet,
		v1alpha1.SidecarSetCustomVersionLabel: version,
	}))
	if err != nil {
		return nil, err
	}
	var latest *v1alpha1.SidecarSetRevision
	for _, r := range revs {
		if latest == nil || r.Revision > latest.Revision {
			latest = r
		}
	}
	if latest == nil {
		return nil, fmt.Errorf("no revision of SidecarSet %q has label %s=%s", sidecarSet, v1alpha1.SidecarSetCustomVersionLabel, version)
	}
	return latest, nil
}
