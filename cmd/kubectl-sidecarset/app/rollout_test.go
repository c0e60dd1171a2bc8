package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestAssess: the plugin prints the server's verdict (phase, summary, message) and decides nothing
// itself; a paused rollout gets the command that resumes it.
func TestAssess(t *testing.T) {
	view := func(phase v1alpha1.RolloutPhase, summary, message string) *v1alpha1.SidecarSetRollout {
		return &v1alpha1.SidecarSetRollout{Status: v1alpha1.SidecarSetRolloutStatus{Phase: phase, Summary: summary, Message: message}}
	}
	tests := []struct {
		name string
		view *v1alpha1.SidecarSetRollout
		want progress
	}{
		{"done", view("Done", "2 of 2 pods updated", ""), progress{line: "2 of 2 pods updated", done: true}},
		{"progressing", view("Progressing", "1 of 2 pods updated", ""), progress{line: "1 of 2 pods updated"}},
		{"stalled", view("Stalled", "0 of 1 pods updated", "pods fail to run the new sidecar: ns/p: ImagePullBackOff"),
			progress{line: "0 of 1 pods updated", stalled: "pods fail to run the new sidecar: ns/p: ImagePullBackOff"}},
		{"paused", view("Paused", "0 of 1 pods updated", "the rollout is paused"),
			progress{line: "0 of 1 pods updated", stalled: "the rollout is paused (kubectl sidecarset rollout resume s)"}},
		{"no verdict yet", view("", "", ""), progress{line: `SidecarSet "s" rollout: no progress reported yet`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, assess("s", tt.view), cmp.AllowUnexported(progress{})); diff != "" {
				t.Errorf("assess (-want +got):\n%s", diff)
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
