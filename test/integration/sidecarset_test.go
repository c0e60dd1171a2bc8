package integration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

const manualExample = `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: test-sidecarset
spec:
  selector:
    matchLabels:
      app: nginx
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 1
  containers:
  - name: sidecar1
    image: centos:6.7
    command: ["sleep", "999d"]
    volumeMounts:
    - name: log-volume
      mountPath: /var/log
  volumes:
  - name: log-volume
    emptyDir: {}
`

func TestCreateDefaultsAndHashes(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	in := &v1alpha1.SidecarSet{}
	if err := yaml.Unmarshal([]byte(manualExample), in); err != nil {
		t.Fatal(err)
	}
	in.Status.MatchedPods = 7 // must be dropped on create
	got, err := s.Client.AppsV1alpha1().SidecarSets().Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 || got.Status.MatchedPods != 0 {
		t.Errorf("generation %d matchedPods %d, want 1 and 0", got.Generation, got.Status.MatchedPods)
	}
	c := got.Spec.Containers[0]
	if c.PodInjectPolicy != v1alpha1.BeforeAppContainerType || c.ImagePullPolicy != "IfNotPresent" ||
		*got.Spec.RevisionHistoryLimit != 10 || got.Spec.UpdateStrategy.Partition.IntValue() != 0 {
		t.Errorf("defaults not applied: %+v", got.Spec)
	}
	// Golden value: OpenKruise's hash of the same defaulted containers (see pkg/apis/apps/hash).
	if h := got.Annotations[v1alpha1.SidecarSetHashAnnotation]; h != "4zbdc2xzc8w7c4x2c6984266bc9d7zf87x946v7xdfv988f6c6fc9b7dz47w8zd5" {
		t.Errorf("hash annotation = %q", h)
	}

	var updated *v1alpha1.SidecarSet
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error { // the controller writes the status meanwhile
		cur, err := s.Client.AppsV1alpha1().SidecarSets().Get(ctx, got.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Containers[0].Image = "centos:7"
		cur.Annotations[v1alpha1.SidecarSetHashAnnotation] = "pinned"
		updated, err = s.Client.AppsV1alpha1().SidecarSets().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 || updated.Annotations[v1alpha1.SidecarSetHashAnnotation] == "pinned" {
		t.Errorf("update: generation %d hash %q", updated.Generation, updated.Annotations[v1alpha1.SidecarSetHashAnnotation])
	}

	// The server's controller writes the status too (latestRevision): read again on a conflict.
	var st *v1alpha1.SidecarSet
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := s.Client.AppsV1alpha1().SidecarSets().Get(ctx, updated.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status.MatchedPods = 3
		cur.Spec.Containers[0].Image = "ignored:1"
		st, err = s.Client.AppsV1alpha1().SidecarSets().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.MatchedPods != 3 || st.Spec.Containers[0].Image != "centos:7" || st.Generation != 2 {
		t.Errorf("status update changed spec or lost status: %+v", st)
	}
}
