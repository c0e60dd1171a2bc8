package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// ValidateRolloutAction validates an action POSTed to a SidecarSet's rollout subresource: Pause and
// Resume take nothing, Rollback a revision name, Preview a proposed spec.
func ValidateRolloutAction(spec *apps.SidecarSetRolloutSpec) field.ErrorList {
	path := field.NewPath("spec")
	if spec.Proposed != nil && spec.Action != apps.RolloutActionPreview {
		return field.ErrorList{field.Forbidden(path.Child("proposed"), "only allowed with action Preview")}
	}
	switch spec.Action {
	case apps.RolloutActionPreview:
		if spec.Proposed == nil {
			return field.ErrorList{field.Required(path.Child("proposed"), "the SidecarSet spec to preview")}
		}
		if spec.RevisionName != "" {
			return field.ErrorList{field.Forbidden(path.Child("revisionName"), "only allowed with action Rollback")}
		}
	case apps.RolloutActionPause, apps.RolloutActionResume:
		if spec.RevisionName != "" {
			return field.ErrorList{field.Forbidden(path.Child("revisionName"), "only allowed with action Rollback")}
		}
	case apps.RolloutActionRollback:
		if spec.RevisionName == "" {
			return field.ErrorList{field.Required(path.Child("revisionName"), "the revision to roll back to")}
		}
	default:
		return field.ErrorList{field.NotSupported(path.Child("action"), spec.Action,
			[]apps.RolloutAction{apps.RolloutActionPause, apps.RolloutActionResume, apps.RolloutActionRollback, apps.RolloutActionPreview})}
	}
	return nil
}
