// Command pause is the sandbox ("pause") image of the local real node (sidecarset.dev/pause:local,
// containerd's sandbox_image; hack/local-up.sh builds it): it holds the pod's namespaces and waits
// for SIGTERM or SIGINT, then exits 0.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	<-signals
}
