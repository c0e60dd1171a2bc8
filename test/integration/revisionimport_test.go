package integration

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestRevisionImportRefusals: an import is refused, with its field path, when it would write a
// NamespacedSidecarSet's history, carries another SidecarSet's name, gives hashes other than the
// server's, or is newer than the history of its existing SidecarSet; an import without hashes is
// stored with the server's.
func TestRevisionImportRefusals(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	created, err := s.Client.AppsV1alpha1().SidecarSets().Create(ctx, manualSidecarSet(t), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := waitSettled(t, s, created.Name)
	revisions := s.Client.AppsV1alpha1().SidecarSetRevisions()
	latest, err := revisions.Get(ctx, live.Status.LatestRevision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revision := func(set, name string, number int64) *v1alpha1.SidecarSetRevision {
		return &v1alpha1.SidecarSetRevision{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.SidecarSetNameLabel: set}},
			SidecarSetName: set, Revision: number, Spec: latest.Spec,
		}
	}
	for _, tc := range []struct {
		name  string
		rev   *v1alpha1.SidecarSetRevision
		field string
	}{
		{"a NamespacedSidecarSet's history", revision("team-a.web", "team-a.web-1", 1), "sidecarSetName"},
		{"a name of another SidecarSet", revision("later", "other-1", 1), "metadata.name"},
		{"a hash other than the server's", func() *v1alpha1.SidecarSetRevision {
			r := revision("later", "later-1", 1)
			r.Annotations = map[string]string{v1alpha1.SidecarSetHashAnnotation: "not-the-hash"}
			return r
		}(), "metadata.annotations[kruise.io/sidecarset-hash]"},
		{"newer than the existing SidecarSet's history", revision(live.Name, live.Name+"-imported", latest.Revision+1), "revision"},
		{"a number of the existing SidecarSet's history", revision(live.Name, live.Name+"-imported", latest.Revision), "revision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := revisions.Create(ctx, tc.rev, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want Invalid at %s", err, tc.field)
			}
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			if len(causes) != 1 || causes[0].Field != tc.field {
				t.Errorf("causes %+v, want one at %s", causes, tc.field)
			}
		})
	}
	stored, err := revisions.Create(ctx, revision("later", "later-1", 7), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("an import before its SidecarSet: %v", err)
	}
	if got := stored.Annotations[v1alpha1.SidecarSetHashAnnotation]; got != live.Annotations[v1alpha1.SidecarSetHashAnnotation] {
		t.Errorf("stored hash %q, want the server's %q", got, live.Annotations[v1alpha1.SidecarSetHashAnnotation])
	}
}
