package validation

import (
	"testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

func TestValidatePreDownload(t *testing.T) {
	const parallelism = "metadata.annotations[apps.kruise.io/image-predownload-parallelism]"
	annotate := func(kv ...string) func(*apps.SidecarSet) {
		return func(ss *apps.SidecarSet) {
			ss.Annotations = map[string]string{}
			for i := 0; i < len(kv); i += 2 {
				ss.Annotations[kv[i]] = kv[i+1]
			}
		}
	}
	cases := []specCase{
		{name: "valid", mutate: annotate("apps.kruise.io/image-predownload-parallelism", "3",
			"apps.kruise.io/image-predownload-timeout-seconds", "120", "apps.kruise.io/image-predownload-min-updated-ready-pods", "10%")},
		{name: "negative parallelism", mutate: annotate("apps.kruise.io/image-predownload-parallelism", "-2"),
			want: []wantErr{{parallelism, invalid, "must be a non-negative integer"}}},
		{name: "timeout of 0", mutate: annotate("apps.kruise.io/image-predownload-timeout-seconds", "0"),
			want: []wantErr{{"metadata.annotations[apps.kruise.io/image-predownload-timeout-seconds]", invalid, "from 1 to 86400"}}},
		{name: "min-updated-ready not a number", mutate: annotate("apps.kruise.io/image-predownload-min-updated-ready-pods", "half"),
			want: []wantErr{{"metadata.annotations[apps.kruise.io/image-predownload-min-updated-ready-pods]", invalid, "percentage"}}},
	}
	runSpecAndUpdateCases(t, cases)
}

// runSpecAndUpdateCases runs cases on a create (runSpecCases) and on an update of a valid
// SidecarSet, which validates the metadata's annotations too.
func runSpecAndUpdateCases(t *testing.T, cases []specCase) {
	t.Helper()
	runSpecCases(t, cases)
	for _, tc := range cases {
		t.Run("update/"+tc.name, func(t *testing.T) {
			old := validSidecarSet("test-sidecarset")
			ss := old.DeepCopy()
			tc.mutate(ss)
			checkErrors(t, tc.want, ValidateSidecarSetUpdate(ss, old))
		})
	}
}

func TestForbidPreDownloadNamespaced(t *testing.T) {
	n := validNamespaced("team-a", "mesh")
	n.Annotations = map[string]string{"apps.kruise.io/image-predownload-parallelism": "1"}
	want := []wantErr{{"metadata.annotations[apps.kruise.io/image-predownload-parallelism]", forbidden, "cluster SidecarSets only"}}
	checkErrors(t, want, ValidateNamespacedSidecarSet(n))
	checkErrors(t, want, ValidateNamespacedSidecarSetUpdate(n, validNamespaced("team-a", "mesh")))
}
