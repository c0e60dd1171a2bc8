package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestDecodeVersions: one decoder reads SidecarSets of both versions into v1alpha1, through the
// API's conversion; unknown fields are errors.
func TestDecodeVersions(t *testing.T) {
	doc := func(version, extra string) string {
		return `{"apiVersion": "apps.kruise.io/` + version + `", "kind": "SidecarSet", "metadata": {"name": "log"},
"spec": {"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "agent", "image": "agent:v1"}]` + extra + `}}`
	}
	tests := []struct {
		name, doc, wantErr string
	}{
		{"v1alpha1", doc("v1alpha1", ""), ""},
		{"v1beta1", doc("v1beta1", ""), ""},
		{"no apiVersion", `{"kind": "SidecarSet", "metadata": {"name": "log"}, "spec": {"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "agent", "image": "agent:v1"}]}}`, ""},
		{"an unknown field", doc("v1beta1", `, "bogus": 1`), "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := ReadDocuments(strings.NewReader(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			ss := &v1alpha1.SidecarSet{}
			err = NewDecoder().Decode(objs[0], ss)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{ss.Name, ss.Spec.Selector.MatchLabels["app"], ss.Spec.Containers[0].Image}
			if diff := cmp.Diff([]string{"log", "web", "agent:v1"}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
