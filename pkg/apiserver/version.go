package apiserver

import (
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/sidecarset/apiserver/pkg/version"
)

// buildInfo is 1 with the build's version as labels, served on /metrics.
var buildInfo = metrics.NewGaugeVec(&metrics.GaugeOpts{
	Subsystem:      "sidecarset",
	Name:           "build_info",
	Help:           "1, labelled with the server's version (git_version, git_commit), Go version and platform.",
	StabilityLevel: metrics.ALPHA,
}, []string{"git_version", "git_commit", "go_version", "platform"})

var buildInfoOnce sync.Once

// serveVersion makes /version serve this project's build version (pkg/version) instead of the
// Kubernetes release the libraries emulate, which the generic server installs there, and sets the
// build-info metric.
func serveVersion(c *restful.Container) {
	for _, ws := range c.RegisteredWebServices() {
		if ws.RootPath() == "/version" {
			c.Remove(ws)
		}
	}
	info := version.Get()
	routes.Version{Version: &info}.Install(c)
	buildInfoOnce.Do(func() {
		legacyregistry.MustRegister(buildInfo)
		buildInfo.WithLabelValues(info.GitVersion, info.GitCommit, info.GoVersion, info.Platform).Set(1)
	})
}
