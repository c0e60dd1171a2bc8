package validation

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

func TestValidateSidecarSetUpdate(t *testing.T) {
	hot := func(c *apps.SidecarContainer) {
		c.UpgradeStrategy = apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
	}
	tests := []struct {
		name     string
		old, new func(ss *apps.SidecarSet)
		want     []wantErr
	}{
		{name: "image change (validation/65)", new: func(ss *apps.SidecarSet) { ss.Spec.Containers[0].Image = "test-image:2.0" }},
		{name: "upgradeType change (validation/63)", new: func(ss *apps.SidecarSet) { hot(&ss.Spec.Containers[0]) },
			want: []wantErr{{"spec.containers[0].upgradeStrategy.upgradeType", invalid, "container test-sidecar upgradeType is immutable"}}},
		{name: "upgradeType set where it was empty", old: func(ss *apps.SidecarSet) { ss.Spec.Containers[0].UpgradeStrategy.UpgradeType = "" },
			new: func(ss *apps.SidecarSet) { hot(&ss.Spec.Containers[0]) }},
		{name: "added container", new: func(ss *apps.SidecarSet) {
			ss.Spec.Containers = append(ss.Spec.Containers, validContainer("new"))
		}, want: []wantErr{{"spec.containers[1].name", forbidden, "container new is not found"}}},
		{name: "renamed container", new: func(ss *apps.SidecarSet) { ss.Spec.Containers[0].Name = "renamed" },
			want: []wantErr{{"spec.containers[0].name", forbidden, "container renamed is not found"}}},
		{name: "removed container", old: func(ss *apps.SidecarSet) {
			ss.Spec.Containers = append(ss.Spec.Containers, validContainer("gone"))
		}},
		{name: "added init container", new: func(ss *apps.SidecarSet) {
			ss.Spec.InitContainers = []apps.SidecarContainer{validContainer("init")}
		}},
		{name: "spec rules apply", new: func(ss *apps.SidecarSet) { ss.Spec.Selector = nil },
			want: []wantErr{{"spec.selector", required, "no selector defined for SidecarSet"}}},
		{name: "canary base changed", old: func(ss *apps.SidecarSet) { canary(ss, "base-1") },
			new:  func(ss *apps.SidecarSet) { canary(ss, "base-2") },
			want: []wantErr{{"metadata.annotations[apps.kruise.io/sidecarset-base]", invalid, "annotations[apps.kruise.io/sidecarset-base] is immutable"}}},
		{name: "canary base kept", old: func(ss *apps.SidecarSet) { canary(ss, "base-1") }, new: func(ss *apps.SidecarSet) { canary(ss, "base-1") }},
		{name: "canary marker removed", old: func(ss *apps.SidecarSet) { canary(ss, "base-1") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldSS, newSS := validSidecarSet("test-sidecarset"), validSidecarSet("test-sidecarset")
			if tt.old != nil {
				tt.old(oldSS)
			}
			if tt.new != nil {
				tt.new(newSS)
			}
			checkErrors(t, tt.want, ValidateSidecarSetUpdate(newSS, oldSS))
		})
	}
}

// canary makes ss a NotUpdate canary of base.
func canary(ss *apps.SidecarSet, base string) {
	ss.Annotations = map[string]string{apps.SidecarSetCanaryAnnotation: "true", apps.SidecarSetBaseAnnotation: base}
	ss.Spec.UpdateStrategy.Type = apps.NotUpdateSidecarSetStrategyType
}

func TestValidateSidecarSetStatusUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new apps.SidecarSetStatus
		want     []wantErr
	}{
		{name: "valid", new: apps.SidecarSetStatus{ObservedGeneration: 2, MatchedPods: 3, UpdatedPods: 2, ReadyPods: 3, UpdatedReadyPods: 2, CollisionCount: ptr.To[int32](1)}},
		{name: "negative counters", new: apps.SidecarSetStatus{ObservedGeneration: -1, MatchedPods: -1, UpdatedPods: -1, ReadyPods: -1, UpdatedReadyPods: -1},
			want: []wantErr{
				{"status.observedGeneration", invalid, ""}, {"status.matchedPods", invalid, ""}, {"status.updatedPods", invalid, ""},
				{"status.readyPods", invalid, ""}, {"status.updatedReadyPods", invalid, ""},
			}},
		{name: "collision count decremented", old: apps.SidecarSetStatus{CollisionCount: ptr.To[int32](2)},
			new:  apps.SidecarSetStatus{CollisionCount: ptr.To[int32](1)},
			want: []wantErr{{"status.collisionCount", invalid, "cannot be decremented"}}},
		{name: "negative collision count", new: apps.SidecarSetStatus{CollisionCount: ptr.To[int32](-1)},
			want: []wantErr{{"status.collisionCount", invalid, "must be greater than or equal to 0"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldSS, newSS := validSidecarSet("s"), validSidecarSet("s")
			oldSS.Status, newSS.Status = tt.old, tt.new
			checkErrors(t, tt.want, ValidateSidecarSetStatusUpdate(newSS, oldSS))
		})
	}
}
