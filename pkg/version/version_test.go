package version

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMajorMinor(t *testing.T) {
	for _, tc := range []struct{ in, major, minor string }{
		{"v1.2.3", "1", "2"},
		{"v0.4.0-12-gabcdef0-dirty", "0", "4"},
		{"v0.0.0-20261126013811-c131864a1b2c", "0", "0"},
		{"c131864", "", ""},
		{"v1.x.3", "", ""},
		{"1.2.3", "", ""},
		{"", "", ""},
	} {
		if major, minor := majorMinor(tc.in); major != tc.major || minor != tc.minor {
			t.Errorf("majorMinor(%q) = %q, %q; want %q, %q", tc.in, major, minor, tc.major, tc.minor)
		}
	}
}

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want stamp
	}{
		{"checkout", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126013811-c131864a1b2c+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "c131864a1b2c"}, {Key: "vcs.time", Value: "2026-11-26T01:38:11Z"}, {Key: "vcs.modified", Value: "true"}}},
			stamp{"v0.0.0-20261126013811-c131864a1b2c+dirty", "c131864a1b2c", "dirty", "2026-11-26T01:38:11Z"}},
		{"no version control", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, stamp{gitVersion: "v0.0.0-unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fromBuildInfo(&tc.bi), cmp.AllowUnexported(stamp{})); diff != "" {
				t.Errorf("fromBuildInfo (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStampWins(t *testing.T) {
	s := stamp{"v0.4.0", "abc", "clean", "2026-11-26T00:00:00Z"}
	got := s.info("go1.26.8", "linux/amd64")
	if got.GitVersion != "v0.4.0" || got.Major != "0" || got.Minor != "4" || got.GitCommit != "abc" || got.Platform != "linux/amd64" {
		t.Errorf("info = %+v", got)
	}
}
