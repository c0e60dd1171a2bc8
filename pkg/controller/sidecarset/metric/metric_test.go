package metric

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/component-base/metrics/legacyregistry"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
	"github.com/sidecarset/apiserver/pkg/metricstest"
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
		drop func(p *Progress)
	}{
		{"term ended", func(p *Progress) { p.Reset() }},
		{"SidecarSet deleted", func(p *Progress) { p.Forget("gauged") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)))
			waiting := &rollout.Result{Pods: []rollout.PodPlan{{Pod: &rollout.Pod{Namespace: "ns", Name: "a"}, State: "Waiting", Reason: rollout.ReasonMaxUnavailable}}}
			p.Observe("gauged", waiting)
			p.NotInjected("gauged", []*rollout.Pod{{Namespace: "ns", Name: "b"}})
			if series(t, "sidecarset_pods_waiting", "gauged") == 0 || series(t, "sidecarset_pods_not_injected", "gauged") == 0 {
				t.Fatal("no gauge to drop")
			}
			if series(t, "sidecarset_rollout_stalled", "gauged") == 0 {
				t.Fatal("no stalled gauge to drop")
			}
			tc.drop(p)
			if n := series(t, "sidecarset_pods_waiting", "gauged") + series(t, "sidecarset_pods_not_injected", "gauged") +
				series(t, "sidecarset_rollout_stalled", "gauged"); n != 0 {
				t.Errorf("%d series left", n)
			}
		})
	}
}

// TestRolloutStalledGauge: sidecarset_rollout_stalled is 1 exactly when the round's rollout is
// Stalled as rollout.Progress reads it (the Stalled condition), 0 otherwise, and it follows the
// rollout from one round to the next.
func TestRolloutStalledGauge(t *testing.T) {
	p := New(clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)))
	pod := func(name string, state v1alpha1.PodRolloutState, reason string) rollout.PodPlan {
		return rollout.PodPlan{Pod: &rollout.Pod{Namespace: "ns", Name: name}, State: state, Reason: reason}
	}
	for _, tc := range []struct {
		name string
		pods []rollout.PodPlan
		want float64
	}{
		{"waiting on the budget", []rollout.PodPlan{pod("a", v1alpha1.PodRolloutWaiting, rollout.ReasonMaxUnavailable)}, 0},
		{"a pod fails to run the new sidecar", []rollout.PodPlan{
			pod("a", v1alpha1.PodRolloutFailed, "ImagePullBackOff"), pod("b", v1alpha1.PodRolloutWaiting, rollout.ReasonMaxUnavailable)}, 1},
		{"not upgradable in place", []rollout.PodPlan{pod("a", v1alpha1.PodRolloutNotUpgradable, "")}, 0},
		{"fixed: every pod updated", []rollout.PodPlan{pod("a", v1alpha1.PodRolloutUpdated, "")}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := &rollout.Result{Pods: tc.pods}
			p.Observe("stalling", plan)
			got, ok := metricstest.Gauge(t, "sidecarset_rollout_stalled", "sidecarset", "stalling")
			if !ok {
				t.Fatal("no sidecarset_rollout_stalled series")
			}
			if got != tc.want {
				t.Errorf("sidecarset_rollout_stalled = %v, want %v", got, tc.want)
			}
			if stalled := rollout.Assess(rollout.Items(plan), false).Phase() == v1alpha1.RolloutStalled; stalled != (got == 1) {
				t.Errorf("the gauge is %v but the rollout's phase is stalled=%v", got, stalled)
			}
		})
	}
}

// resizingValues returns the sidecarset_pods_resizing series of a SidecarSet, by reason.
func resizingValues(t *testing.T, name string) map[string]float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "sidecarset_pods_resizing" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["sidecarset"] == name {
				out[labels["reason"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestPodsResizingGauge: sidecarset_pods_resizing counts the pods of each resize reason of a
// round, and drops the reasons a later round no longer has.
func TestPodsResizingGauge(t *testing.T) {
	p := New(clocktesting.NewFakePassiveClock(time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)))
	pod := func(name string, state v1alpha1.PodRolloutState, reason string) rollout.PodPlan {
		return rollout.PodPlan{Pod: &rollout.Pod{Namespace: "ns", Name: name}, State: state, Reason: reason}
	}
	for _, tc := range []struct {
		name string
		pods []rollout.PodPlan
		want map[string]float64
	}{
		{"resizing and deferred", []rollout.PodPlan{pod("a", v1alpha1.PodRolloutUpgrading, rollout.ReasonResizing),
			pod("b", v1alpha1.PodRolloutUpgrading, rollout.ReasonResizeDeferred), pod("c", v1alpha1.PodRolloutUpgrading, rollout.ReasonResizing),
			pod("d", v1alpha1.PodRolloutUpgrading, rollout.ReasonRestarting)}, map[string]float64{"Resizing": 2, "ResizeDeferred": 1}},
		{"infeasible", []rollout.PodPlan{pod("a", v1alpha1.PodRolloutFailed, rollout.ReasonResizeInfeasible),
			pod("b", v1alpha1.PodRolloutWaiting, rollout.ReasonMaxUnavailable)}, map[string]float64{"ResizeInfeasible": 1}},
		{"done", []rollout.PodPlan{pod("a", v1alpha1.PodRolloutUpdated, "")}, map[string]float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p.Observe("resizing", &rollout.Result{Pods: tc.pods})
			if diff := cmp.Diff(tc.want, resizingValues(t, "resizing")); diff != "" {
				t.Errorf("sidecarset_pods_resizing (-want +got):\n%s", diff)
			}
		})
	}
}
