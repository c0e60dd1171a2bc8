package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestReplicaAnswersWithAnotherReplicasWrite: two replicas on one etcd. A SidecarSet's sidecar
// image is changed, and a pod it selects is reviewed by the other replica right after the write
// returned: the pod gets the new image every time. The first writes go straight into etcd (the
// write then reaches neither replica's informer before the review is sent), the others through
// the first replica's API, as kubectl's would.
func TestReplicaAnswersWithAnotherReplicasWrite(t *testing.T) {
	replicas := framework.StartReplicas(t, 2)
	writer, reader := replicas[0], replicas[1]
	ctx := context.Background()
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "fresh"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fresh"}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "sidecar", Image: "busybox:v0"}}},
		},
	}
	if _, err := writer.Client.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "fresh"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.25"}}},
	}
	// The reader knows the SidecarSet once synced.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		resp := review(t, reader.Config, pod)
		return resp.Allowed && strings.Contains(string(resp.Patch), "busybox:v0"), nil
	}); err != nil {
		t.Fatalf("the reader never injected the SidecarSet: %v", err)
	}
	const straight, throughAPI = 10, 10
	for i := 1; i <= straight+throughAPI; i++ {
		image := fmt.Sprintf("busybox:v%d", i)
		if i <= straight {
			resp, err := writer.Etcd.Get(ctx, storedKey(writer, ss.Name))
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("stored object: %v", err)
			}
			value := strings.Replace(string(resp.Kvs[0].Value), fmt.Sprintf(`"busybox:v%d"`, i-1), `"`+image+`"`, 1)
			if _, err := writer.Etcd.Put(ctx, storedKey(writer, ss.Name), value); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the controllers write the status
				cur, err := writer.Client.AppsV1alpha1().SidecarSets().Get(ctx, ss.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cur.Spec.Containers[0].Image = image
				_, err = writer.Client.AppsV1alpha1().SidecarSets().Update(ctx, cur, metav1.UpdateOptions{})
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		if resp := review(t, reader.Config, pod); !strings.Contains(string(resp.Patch), `"`+image+`"`) {
			t.Errorf("write %d: the other replica answered without %s: allowed=%v patch=%s", i, image, resp.Allowed, resp.Patch)
		}
	}
}
