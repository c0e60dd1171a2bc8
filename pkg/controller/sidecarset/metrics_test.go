package sidecarset

import (
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// series counts the series of a metric family labelled sidecarset=name.
func series(t *testing.T, family, name string) int {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sidecarset" && l.GetValue() == name {
					n++
				}
			}
		}
	}
	return n
}

// TestGaugesReset: the gauges of a replica whose term ends are dropped (the new leader reports
// them), and so are those of a deleted SidecarSet.
func TestGaugesReset(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop func(p *progress)
	}{
		{"term ended", func(p *progress) { p.reset() }},
		{"SidecarSet deleted", func(p *progress) { p.forget("gauged") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProgress(clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)))
			waiting := &rollout.Result{Pods: []rollout.PodPlan{{Pod: &rollout.Pod{Namespace: "ns", Name: "a"}, State: "Waiting", Reason: rollout.ReasonMaxUnavailable}}}
			p.observe("gauged", waiting)
			p.notInjected("gauged", []*rollout.Pod{{Namespace: "ns", Name: "b"}})
			if series(t, "sidecarset_pods_waiting", "gauged") == 0 || series(t, "sidecarset_pods_not_injected", "gauged") == 0 {
				t.Fatal("no gauge to drop")
			}
			tc.drop(p)
			if n := series(t, "sidecarset_pods_waiting", "gauged") + series(t, "sidecarset_pods_not_injected", "gauged"); n != 0 {
				t.Errorf("%d series left", n)
			}
		})
	}
}
