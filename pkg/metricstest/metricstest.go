// Package metricstest reads the series the server's /metrics registry holds, for tests.
package metricstest

import (
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
)

// Gauge returns the value of the gauge of family whose label is value, on the registry /metrics
// serves, and whether there is one.
func Gauge(t testing.TB, family, label, value string) (float64, bool) {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}
