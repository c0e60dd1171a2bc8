package e2e

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestSortSidecarContainersByName: with OpenKruise's feature gate EnableSortSidecarContainerByName
// on (off by default, as there), the sidecars of several SidecarSets are placed in container name
// order rather than SidecarSet name order, and every SidecarSet is served by the webhook.
func TestSortSidecarContainersByName(t *testing.T) {
	ctx := context.Background()
	ns := tempNamespace(t, "e2e-sort-")
	labels := map[string]string{"e2e-sort": "1"}
	for _, s := range []struct{ set, container string }{{"e2e-sort-a", "zz-sidecar"}, {"e2e-sort-b", "aa-sidecar"}} {
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: s.set}, Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: labels},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: s.container, Image: "busybox:1.36"}}},
		}}
		if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, ss.Name, metav1.DeleteOptions{}) })
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sorted", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false), Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36"}}}}
	containersAre := func(want ...string) {
		t.Helper()
		eventually(t, fmt.Sprintf("containers %v", want), time.Minute, func(context.Context) (bool, string) {
			got, err := createPodDryRun(pod)
			if err != nil {
				return false, err.Error()
			}
			var names []string // in pod order
			for _, c := range got.Spec.Containers {
				names = append(names, c.Name)
			}
			return reflect.DeepEqual(names, want), fmt.Sprint(names)
		})
	}
	for _, name := range []string{"e2e-sort-a", "e2e-sort-b"} {
		waitSettled(t, name)
	}
	containersAre("zz-sidecar", "aa-sidecar", "app") // SidecarSet name order

	restartServerWithArgs(t, "--feature-gates=EnableSortSidecarContainerByName=true")
	containersAre("aa-sidecar", "zz-sidecar", "app")
	for _, name := range []string{"e2e-sort-a", "e2e-sort-b"} {
		eventually(t, name+" served by the webhook because of the gate", time.Minute, func(ctx context.Context) (bool, string) {
			view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			in := view.Status.Injection
			return in != nil && in.Path == "Webhook" && in.Reason == "SortSidecarContainersByName", fmt.Sprintf("%+v", in)
		})
	}
}
