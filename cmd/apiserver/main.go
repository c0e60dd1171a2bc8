// Command sidecarset-apiserver serves the apps.kruise.io SidecarSet API as an aggregated API server,
// injects sidecars into new pods and upgrades them in place.
package main

import (
	"os"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"

	"github.com/sidecarset/apiserver/cmd/apiserver/app"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	os.Exit(cli.Run(app.NewCommand(ctx)))
}
