package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// validNamespaced returns a defaulted NamespacedSidecarSet that passes validation: the spec of
// validSidecarSet, in a namespace.
func validNamespaced(namespace, name string) *apps.NamespacedSidecarSet {
	ss := validSidecarSet(name)
	return &apps.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: ss.Spec}
}

func TestValidateNamespacedSidecarSet(t *testing.T) {
	nsSelector := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	tests := []struct {
		name   string
		change func(n *apps.NamespacedSidecarSet)
		want   []wantErr
	}{
		{name: "valid"},
		{name: "spec.namespace forbidden", change: func(n *apps.NamespacedSidecarSet) { n.Spec.Namespace = "team-a" },
			want: []wantErr{{"spec.namespace", forbidden, "selects pods of its own namespace only"}}},
		{name: "spec.namespace of its own namespace forbidden too", change: func(n *apps.NamespacedSidecarSet) { n.Spec.Namespace = n.Namespace },
			want: []wantErr{{"spec.namespace", forbidden, ""}}},
		{name: "spec.namespaceSelector forbidden", change: func(n *apps.NamespacedSidecarSet) { n.Spec.NamespaceSelector = nsSelector },
			want: []wantErr{{"spec.namespaceSelector", forbidden, "selects pods of its own namespace only"}}},
		{name: "both forbidden, and exclusive as for a SidecarSet", change: func(n *apps.NamespacedSidecarSet) {
			n.Spec.Namespace, n.Spec.NamespaceSelector = "team-a", nsSelector
		}, want: []wantErr{
			{"spec.namespace", forbidden, ""}, {"spec.namespaceSelector", forbidden, ""},
			{"spec.namespace", invalid, "mutually exclusive"},
		}},
		{name: "namespace and name of 63 characters together", change: func(n *apps.NamespacedSidecarSet) {
			n.Namespace, n.Name = strings.Repeat("n", 30), strings.Repeat("s", 32)
		}},
		{name: "namespace and name of 64 characters together", change: func(n *apps.NamespacedSidecarSet) {
			n.Namespace, n.Name = strings.Repeat("n", 30), strings.Repeat("s", 33)
		}, want: []wantErr{{"metadata.name", invalid, "must be no more than 32 characters in namespace"}}},
		{name: "name too long alone", change: func(n *apps.NamespacedSidecarSet) { n.Name = strings.Repeat("s", 64) },
			want: []wantErr{{"metadata.name", invalid, "must be no more than 63"}, {"metadata.name", invalid, "must be no more than 56 characters in namespace \"team-a\""}}},
		{name: "missing namespace", change: func(n *apps.NamespacedSidecarSet) { n.Namespace = "" },
			want: []wantErr{{"metadata.namespace", required, ""}}},
		{name: "dotted name, the separator of the SidecarSet name", change: func(n *apps.NamespacedSidecarSet) { n.Name = "a.b" },
			want: []wantErr{{"metadata.name", invalid, "alphanumeric characters or '-'"}}},
		{name: "SidecarSet spec rules apply", change: func(n *apps.NamespacedSidecarSet) { n.Spec.Selector = nil },
			want: []wantErr{{"spec.selector", required, "no selector defined for SidecarSet"}}},
		{name: "SidecarSet container rules apply", change: func(n *apps.NamespacedSidecarSet) { n.Spec.Containers[0].Image = "" },
			want: []wantErr{{"spec.containers[0].image", required, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNamespaced("team-a", "logs")
			if tt.change != nil {
				tt.change(n)
			}
			checkErrors(t, tt.want, ValidateNamespacedSidecarSet(n))
		})
	}
}

func TestValidateNamespacedSidecarSetUpdate(t *testing.T) {
	tests := []struct {
		name     string
		old, new func(n *apps.NamespacedSidecarSet)
		want     []wantErr
	}{
		{name: "image change", new: func(n *apps.NamespacedSidecarSet) { n.Spec.Containers[0].Image = "test-image:2.0" }},
		{name: "renamed container", new: func(n *apps.NamespacedSidecarSet) { n.Spec.Containers[0].Name = "renamed" },
			want: []wantErr{{"spec.containers[0].name", forbidden, "container renamed is not found"}}},
		{name: "added container", new: func(n *apps.NamespacedSidecarSet) {
			n.Spec.Containers = append(n.Spec.Containers, validContainer("new"))
		}, want: []wantErr{{"spec.containers[1].name", forbidden, "container new is not found"}}},
		{name: "spec.namespace set", new: func(n *apps.NamespacedSidecarSet) { n.Spec.Namespace = "team-b" },
			want: []wantErr{{"spec.namespace", forbidden, "selects pods of its own namespace only"}}},
		{name: "spec.namespaceSelector set", new: func(n *apps.NamespacedSidecarSet) {
			n.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
		}, want: []wantErr{{"spec.namespaceSelector", forbidden, ""}}},
		{name: "spec rules apply", new: func(n *apps.NamespacedSidecarSet) { n.Spec.Selector = nil },
			want: []wantErr{{"spec.selector", required, "no selector defined for SidecarSet"}}},
		{name: "canary base changed", old: func(n *apps.NamespacedSidecarSet) { canaryNamespaced(n, "base-1") },
			new:  func(n *apps.NamespacedSidecarSet) { canaryNamespaced(n, "base-2") },
			want: []wantErr{{"metadata.annotations[apps.kruise.io/sidecarset-base]", invalid, "is immutable"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldN, newN := validNamespaced("team-a", "logs"), validNamespaced("team-a", "logs")
			if tt.old != nil {
				tt.old(oldN)
			}
			if tt.new != nil {
				tt.new(newN)
			}
			checkErrors(t, tt.want, ValidateNamespacedSidecarSetUpdate(newN, oldN))
		})
	}
}

// canaryNamespaced makes n a NotUpdate canary of base.
func canaryNamespaced(n *apps.NamespacedSidecarSet, base string) {
	n.Annotations = map[string]string{apps.SidecarSetCanaryAnnotation: "true", apps.SidecarSetBaseAnnotation: base}
	n.Spec.UpdateStrategy.Type = apps.NotUpdateSidecarSetStrategyType
}

func TestValidateNamespacedSidecarSetStatusUpdate(t *testing.T) {
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldN, newN := validNamespaced("team-a", "logs"), validNamespaced("team-a", "logs")
			oldN.Status, newN.Status = tt.old, tt.new
			checkErrors(t, tt.want, ValidateNamespacedSidecarSetStatusUpdate(newN, oldN))
		})
	}
}
