package sidecarset

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestRoundWritesUpgradeStates: a round writes each pod's upgrade state into the pod (the
// upgraded one with its images, the waiting one alone), and a round that changes nothing writes
// nothing.
func TestRoundWritesUpgradeStates(t *testing.T) {
	old, ss := newImage(t)
	h := newHarness(t, old, ss)
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	h.sync()
	latest := h.stored().Status.LatestRevision
	oldRev := old.Status.LatestRevision
	want := map[string]sidecar.UpgradeState{
		"a": {Revision: latest, State: "Upgrading", Reason: "Restarting"},
		"b": {Revision: oldRev, State: "Waiting", Reason: "MaxUnavailable"},
	}
	got := map[string]sidecar.UpgradeState{}
	for name := range want {
		p, err := h.kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got[name] = sidecar.UpgradeStates(p.Annotations[sidecar.UpgradeStateAnnotation])["ss"]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upgrade states (-want +got):\n%s", diff)
	}
	writes := h.stateWrites()
	if _, err := h.round(); err != nil {
		t.Fatal(err)
	}
	if n := h.stateWrites() - writes; n != 0 {
		t.Errorf("a round that changed nothing wrote %d states", n)
	}
}
