package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestCustomVersionRelabel: changing only a SidecarSet's custom-version label relabels the
// revision of its spec, as OpenKruise does, so that the SidecarSet can then be pinned to the new
// custom version (a pin to a custom version no revision carries is refused).
func TestCustomVersionRelabel(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	client := sidecars.AppsV1alpha1().SidecarSets()
	ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "e2e-custom-version",
		Labels: map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "blue"}},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"e2e-custom-version": "1"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "cv", Image: "busybox:1.36"}}},
		}}
	if _, err := client.Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Delete(ctx, ss.Name, metav1.DeleteOptions{}) })
	latest := waitSettled(t, ss.Name).Status.LatestRevision
	relabel := `{"metadata":{"labels":{"` + v1alpha1.SidecarSetCustomVersionLabel + `":"green"}}}`
	if _, err := client.Patch(ctx, ss.Name, types.MergePatchType, []byte(relabel), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "revision "+latest+" labelled green", time.Minute, func(ctx context.Context) (bool, string) {
		r, err := sidecars.AppsV1alpha1().SidecarSetRevisions().Get(ctx, latest, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := r.Labels[v1alpha1.SidecarSetCustomVersionLabel]
		return got == "green", "labelled " + got
	})
	// The admission check reads revisions from the server's cache, which may be a moment behind.
	eventually(t, "a pin to the new custom version accepted", 30*time.Second, func(ctx context.Context) (bool, string) {
		pinned, err := client.Get(ctx, ss.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pinned.Spec.InjectionStrategy.Revision = &v1alpha1.SidecarSetInjectRevision{CustomVersion: ptr.To("green"),
			Policy: v1alpha1.AlwaysSidecarSetInjectRevisionPolicy}
		_, err = client.Update(ctx, pinned, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
}
