package v1alpha1

import "github.com/sidecarset/apiserver/pkg/apis/apps"

// Labels and annotations of SidecarSets and SidecarSetRevisions, with OpenKruise's keys.
const (
	// SidecarSetHashAnnotation holds the hash of a SidecarSet's containers; the server stamps it.
	SidecarSetHashAnnotation = "kruise.io/sidecarset-hash"
	// SidecarSetHashWithoutImageAnnotation holds the same hash computed without images.
	SidecarSetHashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// SidecarSetCustomVersionLabel labels a SidecarSet, and the revisions recorded from it, with a
	// user-chosen version that injectionStrategy.revision.customVersion can select.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
	// SidecarSetNameLabel labels a SidecarSetRevision with the name of its SidecarSet.
	SidecarSetNameLabel = "apps.kruise.io/sidecarset-name"
	// SidecarSetCanaryAnnotation set to "true" marks a canary SidecarSet (apps.CanaryBase).
	SidecarSetCanaryAnnotation = apps.SidecarSetCanaryAnnotation
	// SidecarSetBaseAnnotation names the base SidecarSet a canary overrides.
	SidecarSetBaseAnnotation = apps.SidecarSetBaseAnnotation
)
