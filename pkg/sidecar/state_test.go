package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSetUpgradeState(t *testing.T) {
	cases := []struct {
		name    string
		before  string
		set     UpgradeState
		want    string
		changed bool
	}{
		{"first entry", "", UpgradeState{Revision: "logs-1", State: "Waiting", Reason: "MaxUnavailable"},
			`{"logs":{"revision":"logs-1","state":"Waiting","reason":"MaxUnavailable"}}`, true},
		{"unchanged", `{"logs":{"revision":"logs-1","state":"Updated"}}`, UpgradeState{Revision: "logs-1", State: "Updated"},
			`{"logs":{"revision":"logs-1","state":"Updated"}}`, false},
		{"beside another SidecarSet's", `{"mesh":{"state":"Updated"}}`, UpgradeState{Revision: "logs-2", State: "Upgrading", Reason: "Restarting"},
			`{"logs":{"revision":"logs-2","state":"Upgrading","reason":"Restarting"},"mesh":{"state":"Updated"}}`, true},
		{"a value that does not decode starts over", `{not json`, UpgradeState{State: "Failed", Reason: "ResizeInfeasible"},
			`{"logs":{"state":"Failed","reason":"ResizeInfeasible"}}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := map[string]string{}
			if tc.before != "" {
				a[UpgradeStateAnnotation] = tc.before
			}
			changed := SetUpgradeState(a, "logs", tc.set)
			if diff := cmp.Diff(tc.want, a[UpgradeStateAnnotation]); diff != "" || changed != tc.changed {
				t.Errorf("changed %v, want %v; value (-want +got):\n%s", changed, tc.changed, diff)
			}
		})
	}
}
