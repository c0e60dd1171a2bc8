package validation

import (
	"testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

func TestValidateInjectionPath(t *testing.T) {
	const key = "metadata.annotations[apps.kruise.io/injection-path]"
	annotate := func(v string) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) { ss.Annotations = map[string]string{"apps.kruise.io/injection-path": v} }
	}
	cases := []specCase{
		{name: "Policy", mutate: annotate("Policy")},
		{name: "lower case", mutate: annotate("policy"), want: []wantErr{{key, notSupported, `supported values: "Policy"`}}},
		{name: "Webhook", mutate: annotate("Webhook"), want: []wantErr{{key, notSupported, `supported values: "Policy"`}}},
		{name: "empty", mutate: annotate(""), want: []wantErr{{key, notSupported, `supported values: "Policy"`}}},
	}
	runSpecAndUpdateCases(t, cases)
}

func TestForbidInjectionPathNamespaced(t *testing.T) {
	n := validNamespaced("team-a", "mesh")
	n.Annotations = map[string]string{"apps.kruise.io/injection-path": "Policy"}
	want := []wantErr{{"metadata.annotations[apps.kruise.io/injection-path]", forbidden, "only cluster SidecarSets"}}
	checkErrors(t, want, ValidateNamespacedSidecarSet(n))
	checkErrors(t, want, ValidateNamespacedSidecarSetUpdate(n, validNamespaced("team-a", "mesh")))
}
