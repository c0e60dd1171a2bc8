package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestRevisionHistoryAndRollback: the controller records a revision per distinct spec, reports it
// in status.latestRevision, and /rollout Rollback restores an older one.
func TestRevisionHistoryAndRollback(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	sets := s.Client.AppsV1alpha1().SidecarSets()
	created, err := sets.Create(ctx, manualSidecarSet(t), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := waitSettled(t, s, created.Name)

	created = first.DeepCopy()
	created.Spec.Containers[0].Image = "centos:7"
	if _, err := sets.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := waitSettled(t, s, created.Name)
	if second.Status.LatestRevision == first.Status.LatestRevision {
		t.Fatalf("a new spec kept revision %q", second.Status.LatestRevision)
	}
	list, err := sets.GetRevisions(ctx, created.Name, metav1.GetOptions{})
	if err != nil || len(list.Items) != 2 || list.Items[0].Name != second.Status.LatestRevision {
		t.Fatalf("revisions newest first: %v %+v", err, list)
	}
	if got := list.Items[1].Spec.Containers[0].Image; got != "centos:6.7" {
		t.Errorf("old revision image %q", got)
	}

	_, err = sets.Rollout(ctx, created.Name, &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{
		Action: v1alpha1.RolloutActionRollback, RevisionName: first.Status.LatestRevision}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	third := waitSettled(t, s, created.Name)
	if third.Spec.Containers[0].Image != "centos:6.7" || third.Status.LatestRevision != first.Status.LatestRevision {
		t.Errorf("rollback: image %q latest %q", third.Spec.Containers[0].Image, third.Status.LatestRevision)
	}
	list, _ = sets.GetRevisions(ctx, created.Name, metav1.GetOptions{})
	if len(list.Items) != 2 || list.Items[0].Name != first.Status.LatestRevision || list.Items[0].Revision != 3 {
		t.Errorf("rollback should renumber the old revision to 3 and keep 2 revisions: %+v", list.Items)
	}
}

// waitSettled waits until the controller observed the SidecarSet's generation.
func waitSettled(t *testing.T, s *framework.Server, name string) *v1alpha1.SidecarSet {
	t.Helper()
	var ss *v1alpha1.SidecarSet
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		ss, err = s.Client.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ss.Status.ObservedGeneration == ss.Generation && ss.Status.LatestRevision != "", nil
	})
	if err != nil {
		t.Fatalf("SidecarSet %s not settled: %v (%+v)", name, err, ss.Status)
	}
	return ss
}

// TestRevisionsGoWithTheirSidecarSet: deleting a SidecarSet deletes its revisions, and a new
// SidecarSet of the same name starts a fresh history at revision 1.
func TestRevisionsGoWithTheirSidecarSet(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	sets := s.Client.AppsV1alpha1().SidecarSets()
	created, err := sets.Create(ctx, manualSidecarSet(t), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := waitSettled(t, s, created.Name).DeepCopy()
	first.Spec.Containers[0].Image = "centos:7"
	if _, err := sets.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, s, created.Name)
	revisions := s.Client.AppsV1alpha1().SidecarSetRevisions()
	sel := metav1.ListOptions{LabelSelector: v1alpha1.SidecarSetNameLabel + "=" + created.Name}
	if list, err := revisions.List(ctx, sel); err != nil || len(list.Items) != 2 {
		t.Fatalf("revisions before the delete: %v %d", err, len(list.Items))
	}
	if err := sets.Delete(ctx, created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := revisions.List(ctx, sel)
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("the revisions of the deleted SidecarSet are still there: %v", err)
	}
	if _, err := sets.Create(ctx, manualSidecarSet(t), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSettled(t, s, created.Name)
	history, err := sets.GetRevisions(ctx, created.Name, metav1.GetOptions{})
	if err != nil || len(history.Items) != 1 || history.Items[0].Revision != 1 {
		t.Fatalf("a new SidecarSet of the same name: %v %+v, want a fresh history at revision 1", err, history)
	}
}

// manualSidecarSet is the manual's first example.
func manualSidecarSet(t *testing.T) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.Unmarshal([]byte(manualExample), ss); err != nil {
		t.Fatal(err)
	}
	return ss
}
