package injectionsync

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics/legacyregistry"
)

// TestWriteErrorsServedBeforeTheFirst: once registered, sidecarset_injection_object_write_errors_total
// has a series for each kind of injection object, so that alerts and dashboards read 0 (and rate()
// starts) before any write failed.
func TestWriteErrorsServedBeforeTheFirst(t *testing.T) {
	registerMetrics()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range families {
		if f.GetName() != "sidecarset_injection_object_write_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					kinds = append(kinds, l.GetValue())
				}
			}
		}
	}
	sort.Strings(kinds)
	want := []string{"MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingWebhookConfiguration"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("series by kind (-want +got):\n%s", diff)
	}
}
