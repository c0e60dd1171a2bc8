package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestRollbackIsAdmittedAsAnUpdate: patchPodMetadata allowed by the whitelist ConfigMap is
// recorded in a revision, then removed from the spec, then the whitelist goes away. A Rollback
// through sidecarsets/rollout to that revision is refused, as an update restoring the same
// patchPodMetadata is: the admission chain sees the rollback as an update of the SidecarSet.
func TestRollbackIsAdmittedAsAnUpdate(t *testing.T) {
	parallelTest(t, fixtureWhitelist)
	deleteSidecarSets(t, "rb-a")
	t.Cleanup(func() { deleteSidecarSets(t, "rb-a") })
	setWhitelist(t, true)
	defer setWhitelist(t, false)
	ctx := context.Background()
	client := sidecars.AppsV1alpha1().SidecarSets()
	ss := &v1alpha1.SidecarSet{}
	ss.Name = "rb-a"
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rollback-admission"}}
	ss.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "rb-sidecar", Image: "busybox:1.36"}}}
	ss.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{
		Annotations: map[string]string{"acc.example.com/agent": "on"}, PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy}}
	if _, err := client.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatalf("patchPodMetadata the whitelist allows: %v", err)
	}
	first := waitSettled(t, "rb-a")
	// The controller may write the status meanwhile (a plan that changed its path or neighbours).
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		without, err := client.Get(ctx, "rb-a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		without.Spec.PatchPodMetadata = nil
		_, err = client.Update(ctx, without, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	current := waitSettled(t, "rb-a")
	if current.Status.LatestRevision == first.Status.LatestRevision {
		t.Fatal("removing patchPodMetadata recorded no new revision")
	}
	setWhitelist(t, false)

	// The controller may write the status meanwhile: an update meeting a conflict is tried again
	// on the object as stored, so that the refusal compared is the admission's.
	var updateErr error
	for range 5 {
		stored, err := client.Get(ctx, "rb-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		back := stored.DeepCopy()
		back.Spec.PatchPodMetadata = first.Spec.PatchPodMetadata
		if _, updateErr = client.Update(ctx, back, metav1.UpdateOptions{}); !apierrors.IsConflict(updateErr) {
			break
		}
	}
	if updateErr == nil {
		t.Fatal("an update restoring patchPodMetadata without a whitelist was accepted")
	}
	_, err := client.Rollout(ctx, "rb-a", &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{
		Action: v1alpha1.RolloutActionRollback, RevisionName: first.Status.LatestRevision}}, metav1.CreateOptions{})
	if err == nil {
		t.Fatal("a rollback restoring patchPodMetadata without a whitelist was accepted")
	}
	if apierrors.ReasonForError(err) != apierrors.ReasonForError(updateErr) {
		t.Errorf("rollback refused with %v (%s), the update with %v (%s)", err, apierrors.ReasonForError(err), updateErr, apierrors.ReasonForError(updateErr))
	}
	got, _ := client.Get(ctx, "rb-a", metav1.GetOptions{})
	if len(got.Spec.PatchPodMetadata) != 0 {
		t.Errorf("the refused rollback changed rb-a: %+v", got.Spec.PatchPodMetadata)
	}
}
