package rollout

import (
	"testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestAssess: held, not upgradable and missed pods do not hold a rollout up; waiting, upgrading
// and unavailable updated pods do; a failed pod stalls it, and so does a pause; the phase says which.
func TestAssess(t *testing.T) {
	item := func(state v1alpha1.PodRolloutState, reason string) Item {
		return Item{Namespace: "ns", Name: "p", State: state, Reason: reason}
	}
	for _, tc := range []struct {
		name    string
		items   []Item
		paused  bool
		done    bool
		stalled bool
		phase   v1alpha1.RolloutPhase
	}{
		{"no pods", nil, false, true, false, v1alpha1.RolloutDone},
		{"all updated", []Item{item(v1alpha1.PodRolloutUpdated, ""), item(v1alpha1.PodRolloutUpdated, "")}, false, true, false, v1alpha1.RolloutDone},
		{"updated, not ready", []Item{item(v1alpha1.PodRolloutUpdated, ReasonNotReady)}, false, false, false, v1alpha1.RolloutProgressing},
		{"held by partition and selector", []Item{item(v1alpha1.PodRolloutUpdated, ""), item(v1alpha1.PodRolloutWaiting, ReasonPartition),
			item(v1alpha1.PodRolloutWaiting, ReasonNotSelected), item(v1alpha1.PodRolloutWaiting, ReasonNotUpdateStrategy)}, false, true, false, v1alpha1.RolloutDone},
		{"not upgradable or missed", []Item{item(v1alpha1.PodRolloutNotUpgradable, ""), item(v1alpha1.PodRolloutNotInjected, ReasonAdmittedWithout)}, false, true, false, v1alpha1.RolloutDone},
		{"waiting for the budget", []Item{item(v1alpha1.PodRolloutWaiting, ReasonMaxUnavailable)}, false, false, false, v1alpha1.RolloutProgressing},
		{"upgrading", []Item{item(v1alpha1.PodRolloutUpgrading, ReasonRestarting)}, false, false, false, v1alpha1.RolloutProgressing},
		{"paused", []Item{item(v1alpha1.PodRolloutWaiting, ReasonPaused)}, true, false, true, v1alpha1.RolloutPaused},
		{"paused but done", []Item{item(v1alpha1.PodRolloutUpdated, "")}, true, true, false, v1alpha1.RolloutDone},
		{"failed", []Item{item(v1alpha1.PodRolloutFailed, "ImagePullBackOff")}, false, false, true, v1alpha1.RolloutStalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Assess(tc.items, tc.paused)
			if p.Done() != tc.done || (p.Stalled() != "") != tc.stalled || p.Phase() != tc.phase {
				t.Errorf("done %v, stalled %q, phase %s; want done %v, stalled %v, phase %s", p.Done(), p.Stalled(), p.Phase(), tc.done, tc.stalled, tc.phase)
			}
		})
	}
}

// TestPhaseOrder: Stalled ranks before Done, Done before Paused, Paused before Progressing, and
// Stalled follows the phase.
func TestPhaseOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Progress
		phase   v1alpha1.RolloutPhase
		stalled string
	}{
		{"nothing to do", Progress{}, v1alpha1.RolloutDone, ""},
		{"progressing", Progress{Upgrading: 1}, v1alpha1.RolloutProgressing, ""},
		{"paused", Progress{Waiting: 1, Paused: true}, v1alpha1.RolloutPaused, "the rollout is paused"},
		{"done wins over paused", Progress{Updated: 1, Paused: true}, v1alpha1.RolloutDone, ""},
		{"failed wins over paused", Progress{Failed: []string{"ns/a: CrashLoopBackOff"}, Waiting: 1, Paused: true},
			v1alpha1.RolloutStalled, "pods fail to run the new sidecar: ns/a: CrashLoopBackOff"},
		{"failed wins over done", Progress{Failed: []string{"ns/a: x", "ns/b: y"}}, v1alpha1.RolloutStalled, "pods fail to run the new sidecar: ns/a: x; ns/b: y"},
	} {
		if got, stalled := tc.p.Phase(), tc.p.Stalled(); got != tc.phase || stalled != tc.stalled {
			t.Errorf("%s: phase %s, stalled %q; want %s, %q", tc.name, got, stalled, tc.phase, tc.stalled)
		}
	}
}
