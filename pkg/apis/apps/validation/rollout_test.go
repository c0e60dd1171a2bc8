package validation

import (
	"testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

func TestValidateRolloutAction(t *testing.T) {
	spec := &apps.SidecarSetSpec{}
	tests := []struct {
		name    string
		action  apps.SidecarSetRolloutSpec
		invalid string // the field at fault, "" when valid
	}{
		{"pause", apps.SidecarSetRolloutSpec{Action: apps.RolloutActionPause}, ""},
		{"rollback needs a revision", apps.SidecarSetRolloutSpec{Action: apps.RolloutActionRollback}, "spec.revisionName"},
		{"preview", apps.SidecarSetRolloutSpec{Action: apps.RolloutActionPreview, Proposed: spec}, ""},
		{"preview needs a spec", apps.SidecarSetRolloutSpec{Action: apps.RolloutActionPreview}, "spec.proposed"},
		{"preview takes no revision", apps.SidecarSetRolloutSpec{Action: apps.RolloutActionPreview, Proposed: spec, RevisionName: "r"}, "spec.revisionName"},
		{"a spec only for preview", apps.SidecarSetRolloutSpec{Action: apps.RolloutActionPause, Proposed: spec}, "spec.proposed"},
		{"unknown action", apps.SidecarSetRolloutSpec{Action: "Jump"}, "spec.action"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := ValidateRolloutAction(&tt.action)
			got := ""
			if len(errs) > 0 {
				got = errs[0].Field
			}
			if got != tt.invalid {
				t.Errorf("ValidateRolloutAction: field %q, want %q (%v)", got, tt.invalid, errs)
			}
		})
	}
}
