// Package contain turns a panic in one item of work (a SidecarSet's round, a reconcile, one pod
// entering the cache) into an error for that item, counted in a metric, so that a bug or an
// unexpected input never takes the API and injection down with the process.
package contain

import (
	"fmt"
	"runtime/debug"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

var (
	panics = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      "sidecarset",
		Name:           "recovered_panics_total",
		Help:           "Panics contained to one item of work (the item failed, the server kept serving), by where they happened.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"where"})
	registerOnce sync.Once
)

func register() { registerOnce.Do(func() { legacyregistry.MustRegister(panics) }) }

// Run calls f and returns its error, or an error describing its panic, which it logs with the
// stack and counts under where.
func Run(where string, f func() error) (err error) {
	register()
	defer func() {
		if r := recover(); r != nil {
			panics.WithLabelValues(where).Inc()
			err = fmt.Errorf("recovered from a panic in %s: %v", where, r)
			klog.ErrorS(err, "contained a panic", "where", where, "stack", string(debug.Stack()))
		}
	}()
	return f()
}
