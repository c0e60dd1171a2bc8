package injectionsync

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/sidecarset/apiserver/pkg/controller/injectionsync/plan"
)

// writeErrors counts the injection objects kube-apiserver refused or that could not be written,
// served on the server's /metrics.
var writeErrors = metrics.NewCounterVec(&metrics.CounterOpts{
	Subsystem:      "sidecarset",
	Name:           "injection_object_write_errors_total",
	Help:           "Writes of injection objects (policies, bindings, the webhook configuration) that failed; the SidecarSets they serve are injected by the webhook meanwhile and retried, the others go on. By kind.",
	StabilityLevel: metrics.ALPHA,
}, []string{"kind"})

// everyPod is 1 while the injection webhooks select every pod by their labels (a webhook-path
// SidecarSet whose selector requires no label, more label keys than webhooks, a condition too
// long): every pod create then reaches the webhooks' match condition or this server.
var everyPod = metrics.NewGauge(&metrics.GaugeOpts{
	Subsystem:      "sidecarset",
	Name:           "injection_webhook_selects_every_pod",
	Help:           "1 while the injection webhooks' objectSelectors select every pod (each pod create then reaches their match condition or the server), 0 otherwise.",
	StabilityLevel: metrics.ALPHA,
})

var registerOnce sync.Once

// registerMetrics registers the metrics, writeErrors with a series at 0 for each kind, so that the
// counter is served (and rate() over it starts) before its first error.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(writeErrors, everyPod)
		for _, kind := range []plan.Kind{plan.Webhooks, plan.Policy, plan.Binding} {
			writeErrors.WithLabelValues(string(kind))
		}
	})
}
