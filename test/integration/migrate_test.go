package integration

import (
	"context"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/migrate"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// openKruisePlan converts the exports of OpenKruise's SidecarSet "migrate" and its two
// ControllerRevisions (pkg/migrate/testdata) as kubectl sidecarset migrate does.
func openKruisePlan(t *testing.T) *migrate.Plan {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, file := range []string{"openkruise-sidecarsets.yaml", "openkruise-revisions.yaml"} {
		data, err := os.ReadFile("../../pkg/migrate/testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		list := &unstructured.UnstructuredList{}
		if err := yaml.Unmarshal(data, &list.Object); err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Object["items"].([]interface{}) {
			objs = append(objs, &unstructured.Unstructured{Object: item.(map[string]interface{})})
		}
	}
	plan, err := migrate.Convert(objs)
	if err != nil || len(plan.Warnings) > 0 {
		t.Fatalf("converting: %v %q", err, plan.Warnings)
	}
	return plan
}

// TestImportedRevisionsAreAdopted: revisions a client creates under OpenKruise's names and numbers
// before their SidecarSet are its history: the SidecarSet's hash is OpenKruise's, its latest
// revision is the imported one equal to its spec (none recorded besides), the controller adopts
// both, and a rollback to the older one renumbers it. A revision that is no valid snapshot is
// refused.
func TestImportedRevisionsAreAdopted(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	plan := openKruisePlan(t)
	revisions := s.Client.AppsV1alpha1().SidecarSetRevisions()
	for _, r := range plan.Revisions {
		if _, err := revisions.Create(ctx, r, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating revision %s: %v", r.Name, err)
		}
	}
	openKruise := plan.SidecarSets[0].Annotations[v1alpha1.SidecarSetHashAnnotation]
	created, err := s.Client.AppsV1alpha1().SidecarSets().Create(ctx, plan.SidecarSets[0], metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := created.Annotations[v1alpha1.SidecarSetHashAnnotation]; got != openKruise {
		t.Errorf("the server's hash %s, OpenKruise's %s", got, openKruise)
	}
	ss := waitSettled(t, s, "migrate")
	if ss.Status.LatestRevision != "migrate-cf96db497" {
		t.Errorf("latest revision %s, want OpenKruise's revision 2 migrate-cf96db497", ss.Status.LatestRevision)
	}
	var list *v1alpha1.SidecarSetRevisionList
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err = s.Client.AppsV1alpha1().SidecarSets().GetRevisions(ctx, "migrate", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, r := range list.Items {
			if owner := metav1.GetControllerOf(&r); owner == nil || owner.UID != ss.UID {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil || len(list.Items) != 2 || list.Items[0].Name != "migrate-cf96db497" || list.Items[0].Revision != 2 ||
		list.Items[1].Name != "migrate-56bdc8874" || list.Items[1].Revision != 1 {
		t.Fatalf("revisions %v: want the two imported, adopted, numbered 2 and 1: %+v", err, list)
	}

	if _, err := s.Client.AppsV1alpha1().SidecarSets().Rollout(ctx, "migrate", &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{
		Action: v1alpha1.RolloutActionRollback, RevisionName: "migrate-56bdc8874"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ss = waitSettled(t, s, "migrate")
	list, _ = s.Client.AppsV1alpha1().SidecarSets().GetRevisions(ctx, "migrate", metav1.GetOptions{})
	if ss.Spec.Containers[0].Image != "busybox:1.35" || ss.Status.LatestRevision != "migrate-56bdc8874" ||
		len(list.Items) != 2 || list.Items[0].Name != "migrate-56bdc8874" || list.Items[0].Revision != 3 {
		t.Errorf("rollback to OpenKruise's revision 1: image %s, latest %s, revisions %+v", ss.Spec.Containers[0].Image, ss.Status.LatestRevision, list.Items)
	}

	bad := plan.Revisions[0].DeepCopy()
	bad.Name, bad.Revision = "migrate-bad", 0
	bad.Spec.Containers[0].Image = ""
	if _, err := revisions.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("a revision numbered 0 without an image: %v, want Invalid", err)
	}
}
