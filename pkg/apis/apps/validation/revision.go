package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// ValidateRevisionCreate validates a SidecarSetRevision that a client creates, importing a
// history (kubectl sidecarset migrate writes OpenKruise's ControllerRevisions so): a number of 1 or
// more, and a snapshot that a SidecarSet could hold, checked with the rules of a SidecarSet's spec,
// since rolling back to it or injecting it puts it into pods. The controller's own revisions are
// snapshots of SidecarSets already validated.
func ValidateRevisionCreate(r *apps.SidecarSetRevision) field.ErrorList {
	var allErrs field.ErrorList
	if r.Revision < 1 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("revision"), r.Revision, "must be 1 or more"))
	}
	s := &r.Spec
	spec := &apps.SidecarSetSpec{InitContainers: s.InitContainers, Containers: s.Containers, Volumes: s.Volumes,
		ImagePullSecrets: s.ImagePullSecrets, PatchPodMetadata: s.PatchPodMetadata}
	return append(allErrs, validateInjected(spec, field.NewPath("spec"))...)
}
