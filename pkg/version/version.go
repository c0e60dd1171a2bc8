// Package version is this project's build version, for the server's /version and build-info
// metric and for the plugin's version command.
//
// The build stamps it from git (hack/version.sh prints the linker flags the Makefile, the image
// and hack/local-up.sh pass); a binary built without them (go run, go test) falls back to what the
// Go toolchain records of the checkout (the module's pseudo-version, the commit and its time, and
// whether the tree was modified). Kubernetes' own version (k8s.io/component-base/version) is left
// alone: the libraries read it as the Kubernetes release they emulate.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

// Set by the linker (hack/version.sh): -X github.com/sidecarset/apiserver/pkg/version.gitVersion=...
var (
	gitVersion   string // git describe --tags --always --dirty, as a semantic version when tagged
	gitCommit    string // the full commit hash
	gitTreeState string // clean or dirty
	buildDate    string // RFC 3339, UTC
)

// Get returns the build's version.
func Get() apimachineryversion.Info {
	s := stamp{gitVersion, gitCommit, gitTreeState, buildDate}
	if s.gitVersion == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			s = fromBuildInfo(bi)
		}
	}
	return s.info(runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH)
}

// stamp is what the build says of itself.
type stamp struct{ gitVersion, gitCommit, gitTreeState, buildDate string }

// fromBuildInfo reads the version control facts the Go toolchain records in a binary built from
// a checkout.
func fromBuildInfo(bi *debug.BuildInfo) stamp {
	s := stamp{gitVersion: bi.Main.Version}
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s.gitCommit = kv.Value
		case "vcs.time":
			s.buildDate = kv.Value
		case "vcs.modified":
			s.gitTreeState = map[string]string{"true": "dirty", "false": "clean"}[kv.Value]
		}
	}
	if s.gitVersion == "" || s.gitVersion == "(devel)" {
		s.gitVersion = "v0.0.0-unknown"
	}
	return s
}

// info is the stamp as Kubernetes' version document; Major and Minor are set when the version is
// a tagged semantic version (vMAJOR.MINOR...).
func (s stamp) info(goVersion, platform string) apimachineryversion.Info {
	major, minor := majorMinor(s.gitVersion)
	return apimachineryversion.Info{Major: major, Minor: minor, GitVersion: s.gitVersion, GitCommit: s.gitCommit,
		GitTreeState: s.gitTreeState, BuildDate: s.buildDate, GoVersion: goVersion, Compiler: runtime.Compiler, Platform: platform}
}

// majorMinor splits "v1.2.3-4-gabc" into "1" and "2"; "" and "" when it is not of that form.
func majorMinor(v string) (string, string) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 3 || !strings.HasPrefix(v, "v") {
		return "", ""
	}
	var major, minor int
	if _, err := fmt.Sscanf(parts[0]+" "+parts[1], "%d %d", &major, &minor); err != nil {
		return "", ""
	}
	return fmt.Sprint(major), fmt.Sprint(minor)
}
