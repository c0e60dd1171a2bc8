package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// OpenKruiseSidecarSetNameLabel is the label OpenKruise puts on the ControllerRevisions of a
// SidecarSet, kept on the revisions kubectl sidecarset migrate imports.
const OpenKruiseSidecarSetNameLabel = "kruise.io/sidecarset-name"

// maxRevisionNamePrefix is how much of a SidecarSet's name starts the names of its revisions
// (OpenKruise's and the controller's: <sidecarset>-<hash>, the SidecarSet's name cut to 223).
const maxRevisionNamePrefix = 223

// RevisionNamePrefix returns what the name of every revision of the SidecarSet starts with.
func RevisionNamePrefix(sidecarSet string) string {
	if len(sidecarSet) > maxRevisionNamePrefix {
		sidecarSet = sidecarSet[:maxRevisionNamePrefix]
	}
	return sidecarSet + "-"
}

// ValidateRevisionCreate validates a SidecarSetRevision that a client creates, importing a
// history (kubectl sidecarset migrate writes OpenKruise's ControllerRevisions so): a number of 1 or
// more; a cluster SidecarSet's name (a dotted name is a NamespacedSidecarSet's engine name
// <namespace>.<name>, whose history only the server writes); a name and labels that are the
// SidecarSet's (<sidecarSetName>-<suffix>, as OpenKruise and the controller name revisions, and
// OpenKruise's kruise.io/sidecarset-name label, when present, naming the same SidecarSet); and a
// snapshot that a SidecarSet could hold, checked with the rules of a SidecarSet's spec, since
// rolling back to it or injecting it puts it into pods. The controller's own revisions are
// snapshots of SidecarSets already validated.
func ValidateRevisionCreate(r *apps.SidecarSetRevision) field.ErrorList {
	var allErrs field.ErrorList
	if r.Revision < 1 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("revision"), r.Revision, "must be 1 or more"))
	}
	if ns, local, dotted := apps.SplitNamespacedName(r.SidecarSetName); dotted {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("sidecarSetName"), fmt.Sprintf(
			"%q is the NamespacedSidecarSet %s/%s: the history of a NamespacedSidecarSet is written by the server only, never imported",
			r.SidecarSetName, ns, local)))
	} else if r.SidecarSetName != "" {
		if prefix := RevisionNamePrefix(r.SidecarSetName); r.Name != "" && (!strings.HasPrefix(r.Name, prefix) || r.Name == prefix) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), r.Name, fmt.Sprintf(
				"is not a name of a revision of SidecarSet %s: revisions of %s are named %s<suffix>", r.SidecarSetName, r.SidecarSetName, prefix)))
		}
		if v, ok := r.Labels[OpenKruiseSidecarSetNameLabel]; ok && v != r.SidecarSetName {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "labels").Key(OpenKruiseSidecarSetNameLabel), v,
				fmt.Sprintf("must equal sidecarSetName %s", r.SidecarSetName)))
		}
	}
	return append(allErrs, validateInjected(InjectedSpec(r), field.NewPath("spec"))...)
}

// InjectedSpec returns the revision's snapshot as the SidecarSet spec it injects: the part that
// rules on a SidecarSet's spec (conflicts, the patchPodMetadata whitelist, Pod Security) check.
func InjectedSpec(r *apps.SidecarSetRevision) *apps.SidecarSetSpec {
	s := &r.Spec
	return &apps.SidecarSetSpec{InitContainers: s.InitContainers, Containers: s.Containers, Volumes: s.Volumes,
		ImagePullSecrets: s.ImagePullSecrets, PatchPodMetadata: s.PatchPodMetadata}
}
