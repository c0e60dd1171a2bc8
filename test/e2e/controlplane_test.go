package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestControlPlaneNamespacesNotInjected: a pod in a namespace labelled control-plane, which
// OpenKruise's pod webhook leaves alone, gets no sidecar from either path (a SidecarSet a policy
// can serve, and one the webhook serves because of its shareVolumePolicy), while the same pod in
// an unlabelled namespace gets both.
func TestControlPlaneNamespacesNotInjected(t *testing.T) {
	parallelTest(t)
	ctx := context.Background()
	plain := tempNamespace(t, "e2e-control-plane-off-")
	labelled := labelledNamespace(t, "e2e-control-plane-on-", map[string]string{apps.ControlPlaneNamespaceLabel: "e2e"})
	selector := map[string]string{"e2e-control-plane": "1"}
	for _, s := range []struct {
		name, container string
		share           bool
	}{{"e2e-control-plane-policy", "cp-policy", false}, {"e2e-control-plane-webhook", "cp-webhook", true}} {
		c := v1alpha1.SidecarContainer{Container: corev1.Container{Name: s.container, Image: "busybox:1.36"}}
		if s.share {
			c.ShareVolumePolicy.Type = v1alpha1.ShareVolumePolicyEnabled
		}
		ss := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: s.name},
			Spec: v1alpha1.SidecarSetSpec{Selector: &metav1.LabelSelector{MatchLabels: selector}, Containers: []v1alpha1.SidecarContainer{c}}}
		if _, err := sidecars.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sidecars.AppsV1alpha1().SidecarSets().Delete(ctx, ss.Name, metav1.DeleteOptions{}) })
	}
	waitSettled(t, "e2e-control-plane-policy")
	waitSettled(t, "e2e-control-plane-webhook")
	eventually(t, "e2e-control-plane-webhook served by the webhook", time.Minute, func(ctx context.Context) (bool, string) {
		view, err := sidecars.AppsV1alpha1().SidecarSets().GetRollout(ctx, "e2e-control-plane-webhook", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		in := view.Status.Injection
		return in != nil && in.Path == "Webhook", fmt.Sprintf("%+v", in)
	})
	pod := func(namespace string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: namespace, Labels: selector},
			Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "999d"}}}}}
	}
	waitInjected(t, pod(plain), "cp-policy")
	waitInjected(t, pod(plain), "cp-webhook")

	// Both paths inject the unlabelled namespace now; the labelled one stays without sidecars.
	consistently(t, "pods of namespace "+labelled+" created without sidecars", time.Second, 2*time.Second, func(context.Context) (bool, string) {
		got, err := createPodDryRun(pod(labelled))
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, c := range got.Spec.Containers {
			names = append(names, c.Name)
		}
		return len(got.Spec.Containers) == 1 && got.Annotations[sidecar.InjectedListAnnotation] == "",
			fmt.Sprintf("labelled %s: containers %v, annotation %s=%q", apps.ControlPlaneNamespaceLabel, names, sidecar.InjectedListAnnotation, got.Annotations[sidecar.InjectedListAnnotation])
	})
}

// labelledNamespace creates a namespace named after prefix with labels, deleted at the end of t.
func labelledNamespace(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}
