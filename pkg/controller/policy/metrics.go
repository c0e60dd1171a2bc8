package policy

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// writeErrors counts the injection objects kube-apiserver refused or that could not be written,
// served on the server's /metrics.
var writeErrors = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem:      "sidecarset",
	Name:           "injection_object_write_errors_total",
	Help:           "Writes of injection objects (policies, bindings, the webhook configuration) that failed; the SidecarSets they serve are injected by the webhook meanwhile and retried, the others go on. By kind.",
	StabilityLevel: metrics.ALPHA,
}, []string{"kind"})

var registerOnce sync.Once

func registerMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(writeErrors) })
}
