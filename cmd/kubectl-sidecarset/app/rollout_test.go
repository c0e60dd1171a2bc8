package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestAssess(t *testing.T) {
	pod := func(state v1alpha1.PodRolloutState, reason string) v1alpha1.RolloutPod {
		return v1alpha1.RolloutPod{Namespace: "ns", Name: "p", State: state, Reason: reason}
	}
	view := func(paused bool, pods ...v1alpha1.RolloutPod) *v1alpha1.SidecarSetRollout {
		return &v1alpha1.SidecarSetRollout{ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Status: v1alpha1.SidecarSetRolloutStatus{ObservedGeneration: 2, Paused: paused, Pods: pods}}
	}
	tests := []struct {
		name          string
		view          *v1alpha1.SidecarSetRollout
		done, stalled bool
	}{
		{"all updated", view(false, pod("Updated", ""), pod("Updated", "")), true, false},
		{"partition and not upgradable hold nothing up", view(false, pod("Updated", ""), pod("Waiting", "Partition"), pod("NotUpgradable", "UpdateImmutableField")), true, false},
		{"missed injection holds nothing up", view(false, pod("Updated", ""), pod("NotInjected", "")), true, false},
		{"upgrading", view(false, pod("Updated", ""), pod("Upgrading", "Restarting")), false, false},
		{"updated but not ready", view(false, pod("Updated", "NotReady")), false, false},
		{"failed image stalls", view(false, pod("Failed", "ImagePullBackOff"), pod("Waiting", "MaxUnavailable")), false, true},
		{"paused stalls", view(true, pod("Waiting", "Paused")), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assess("s", tt.view)
			if got.done != tt.done || (got.stalled != "") != tt.stalled {
				t.Errorf("assess = %+v, want done %v stalled %v", got, tt.done, tt.stalled)
			}
		})
	}
}

func TestUndoTarget(t *testing.T) {
	revs := []v1alpha1.SidecarSetRevision{{ObjectMeta: metav1.ObjectMeta{Name: "r3"}, Revision: 3},
		{ObjectMeta: metav1.ObjectMeta{Name: "r2"}, Revision: 2}, {ObjectMeta: metav1.ObjectMeta{Name: "r1"}, Revision: 1}}
	tests := []struct {
		to   int64
		revs []v1alpha1.SidecarSetRevision
		want string // "" for an error
	}{{0, revs, "r2"}, {1, revs, "r1"}, {7, revs, ""}, {0, revs[:1], ""}}
	for _, tt := range tests {
		got, err := undoTarget(tt.revs, tt.to)
		name := ""
		if err == nil {
			name = got.Name
		}
		if diff := cmp.Diff(tt.want, name); diff != "" {
			t.Errorf("undoTarget(to=%d) (-want +got):\n%s (err %v)", tt.to, diff, err)
		}
	}
}
