package sidecarset

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestRoundWritesUpgradeStates: a round writes the upgraded pod's state with its images; the
// waiting pod's state is written alone once the rollout has upgraded no pod for stateQuiet (the
// round asks to be run again then), and a round that changes nothing writes nothing.
func TestRoundWritesUpgradeStates(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	after, err := h.round()
	if err != nil {
		t.Fatal(err)
	}
	if after != 3*time.Second {
		t.Errorf("the round that upgraded a pod asks to run again after %s, want 3s (the states it left)", after)
	}
	h.sync()
	latest := h.stored().Status.LatestRevision
	oldRev := old.Status.LatestRevision
	states := func() map[string]sidecar.UpgradeState {
		got := map[string]sidecar.UpgradeState{}
		for _, name := range []string{"a", "b"} {
			p, err := h.kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got[name] = sidecar.UpgradeStates(p.Annotations[sidecar.UpgradeStateAnnotation])["ss"]
		}
		return got
	}
	upgrading := sidecar.UpgradeState{Revision: latest, State: "Upgrading", Reason: "Restarting"}
	if diff := cmp.Diff(map[string]sidecar.UpgradeState{"a": upgrading, "b": {}}, states()); diff != "" {
		t.Errorf("upgrade states while the rollout upgrades (-want +got):\n%s", diff)
	}
	h.clock.Step(time.Second)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	h.sync()
	if got := states()["b"]; got != (sidecar.UpgradeState{}) {
		t.Errorf("a round 1s after the upgrade wrote the waiting pod's state %+v", got)
	}
	h.clock.Step(2 * time.Second)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	h.sync()
	want := map[string]sidecar.UpgradeState{"a": upgrading, "b": {Revision: oldRev, State: "Waiting", Reason: "MaxUnavailable"}}
	if diff := cmp.Diff(want, states()); diff != "" {
		t.Errorf("upgrade states once the rollout upgraded nothing for 3s (-want +got):\n%s", diff)
	}
	writes := h.stateWrites()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if n := h.stateWrites() - writes; n != 0 {
		t.Errorf("a round that changed nothing wrote %d states", n)
	}
}
