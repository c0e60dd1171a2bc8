package policy

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// TestAdds: an update only adds SidecarSets when every member of the policy stays as it is.
func TestAdds(t *testing.T) {
	withRecords := func(annotation string) *admissionregistrationv1.MutatingAdmissionPolicy {
		p := &admissionregistrationv1.MutatingAdmissionPolicy{}
		p.Annotations = map[string]string{apps.SidecarSetsAnnotation: annotation}
		return p
	}
	const a = `"a":{"hash":"h1","compiledAt":"2026-11-27T10:00:00Z","digest":"d1"}`
	const b = `"b":{"hash":"h2","compiledAt":"2026-11-27T10:00:01Z","digest":"d2"}`
	for _, tc := range []struct {
		name          string
		before, after *admissionregistrationv1.MutatingAdmissionPolicy
		want          bool
	}{
		{"a policy not yet written", nil, withRecords(`{` + a + `}`), true},
		{"the same members", withRecords(`{` + a + `}`), withRecords(`{` + a + `}`), true},
		{"a member added", withRecords(`{` + a + `}`), withRecords(`{` + a + `,` + b + `}`), true},
		{"a member removed", withRecords(`{` + a + `,` + b + `}`), withRecords(`{` + a + `}`), false},
		{"a member's new revision", withRecords(`{` + a + `}`), withRecords(`{"a":{"hash":"h9","compiledAt":"2026-11-27T10:00:00Z","digest":"d1"}}`), false},
		{"a member compiled again", withRecords(`{` + a + `}`), withRecords(`{"a":{"hash":"h1","compiledAt":"2026-11-27T10:05:00Z","digest":"d1"}}`), false},
		{"a member's new form", withRecords(`{` + a + `}`), withRecords(`{"a":{"hash":"h1","compiledAt":"2026-11-27T10:00:00Z","digest":"d9"}}`), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Adds(tc.before, tc.after); got != tc.want {
				t.Errorf("Adds = %v, want %v", got, tc.want)
			}
		})
	}
}
