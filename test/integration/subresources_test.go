package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

func TestSubresourcesAndTable(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	sets := s.Client.AppsV1alpha1().SidecarSets()
	in := &v1alpha1.SidecarSet{}
	if err := yaml.Unmarshal([]byte(manualExample), in); err != nil {
		t.Fatal(err)
	}
	if _, err := sets.Create(ctx, in, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("rollout pause and resume go through the update strategy", func(t *testing.T) {
		view, err := sets.Rollout(ctx, in.Name, &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionPause}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := sets.Get(ctx, in.Name, metav1.GetOptions{})
		if !view.Status.Paused || !got.Spec.UpdateStrategy.Paused || got.Generation != 2 {
			t.Errorf("after Pause: view paused=%v spec paused=%v generation=%d", view.Status.Paused, got.Spec.UpdateStrategy.Paused, got.Generation)
		}
		if _, err := sets.Rollout(ctx, in.Name, &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionResume}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got, _ := sets.Get(ctx, in.Name, metav1.GetOptions{}); got.Spec.UpdateStrategy.Paused {
			t.Error("Resume left the SidecarSet paused")
		}
	})

	t.Run("rollout rejects unknown actions and missing revisions with field paths", func(t *testing.T) {
		_, err := sets.Rollout(ctx, in.Name, &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: "Explode"}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.action") {
			t.Errorf("unknown action: %v", err)
		}
		_, err = sets.Rollout(ctx, in.Name, &v1alpha1.SidecarSetRollout{Spec: v1alpha1.SidecarSetRolloutSpec{Action: v1alpha1.RolloutActionRollback, RevisionName: "nope"}}, metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("rollback to a missing revision: %v", err)
		}
	})

	t.Run("revisions of a missing SidecarSet is not found", func(t *testing.T) {
		if _, err := sets.GetRevisions(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("got %v", err)
		}
		if list, err := sets.GetRevisions(ctx, in.Name, metav1.GetOptions{}); err != nil || list == nil {
			t.Errorf("revisions: %v", err)
		}
	})

	t.Run("table has the kubectl columns", func(t *testing.T) {
		client, err := rest.RESTClientFor(restConfigFor(s.Config))
		if err != nil {
			t.Fatal(err)
		}
		out, err := client.Get().AbsPath("/apis/apps.kruise.io/v1alpha1/sidecarsets").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{`"name":"Name"`, `"name":"Matched"`, `"name":"Updated"`, `"name":"Ready"`, `"name":"Age"`, `"name":"Revision"`} {
			if !strings.Contains(string(out), col) {
				t.Errorf("table lacks column %s: %s", col, out)
			}
		}
	})

	t.Run("field selector on metadata.name", func(t *testing.T) {
		list, err := sets.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + in.Name})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("list: %v, %d items", err, len(list.Items))
		}
	})

	t.Run("validation errors carry field paths", func(t *testing.T) {
		bad := in.DeepCopy()
		bad.Name, bad.ResourceVersion = "bad", ""
		bad.Spec.Containers[0].PodInjectPolicy = "Sideways"
		_, err := sets.Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.containers[0].podInjectPolicy") {
			t.Errorf("got %v", err)
		}
	})
}
