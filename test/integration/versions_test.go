package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// storedKey returns the etcd key of a SidecarSet: the storage prefix, then the group and resource.
func storedKey(s *framework.Server, name string) string {
	return "/" + strings.Trim(s.EtcdPrefix, "/") + "/apps.kruise.io/sidecarsets/" + name
}

// TestStorageVersion checks that a SidecarSet written at v1beta1 is stored as v1alpha1, and that
// one stored by a previous release (v1alpha1, written straight into etcd) reads at v1beta1 with
// the converted values.
func TestStorageVersion(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	beta := &v1beta1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "written-beta"},
		Spec: v1beta1.SidecarSetSpec{
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			CustomVersion:     "v7",
			Containers:        []v1beta1.SidecarContainer{{Container: corev1.Container{Name: "c", Image: "busybox:1"}}},
		},
	}
	if _, err := s.Client.AppsV1beta1().SidecarSets().Create(ctx, beta, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Etcd.Get(ctx, storedKey(s, beta.Name))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("stored object: %v %+v", err, resp)
	}
	stored := string(resp.Kvs[0].Value)
	for _, want := range []string{`"apiVersion":"apps.kruise.io/v1alpha1"`, `"apps.kruise.io/sidecarset-custom-version":"v7"`} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored object lacks %s:\n%s", want, stored)
		}
	}
	if strings.Contains(stored, "customVersion\":\"v7") {
		t.Errorf("stored object has v1beta1's spec.customVersion:\n%s", stored)
	}

	old := `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"SidecarSet","metadata":{"name":"stored-before",` +
		`"uid":"6d4c1b9e-0000-4000-8000-000000000001","generation":1,"creationTimestamp":"2026-01-01T00:00:00Z",` +
		`"labels":{"apps.kruise.io/sidecarset-custom-version":"v1"}},` +
		`"spec":{"selector":{"matchLabels":{"app":"b"}},"namespace":"team-b","containers":[{"name":"c","image":"busybox:1"}]}}`
	if _, err := s.Etcd.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(storedKey(s, "stored-before")), "=", 0)).
		Then(clientv3.OpPut(storedKey(s, "stored-before"), old)).Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := s.Client.AppsV1beta1().SidecarSets().Get(ctx, "stored-before", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "team-b"}}, got.Spec.NamespaceSelector); diff != "" || got.Spec.CustomVersion != "v1" {
		t.Errorf("v1beta1 read of a stored v1alpha1 object: customVersion %q namespaceSelector (-want +got):\n%s", got.Spec.CustomVersion, diff)
	}
	alpha, err := s.Client.AppsV1alpha1().SidecarSets().Get(ctx, "stored-before", metav1.GetOptions{})
	if err != nil || alpha.Spec.Namespace != "team-b" || alpha.Labels[v1alpha1.SidecarSetCustomVersionLabel] != "v1" {
		t.Errorf("v1alpha1 read of a stored v1alpha1 object: %v %+v", err, alpha)
	}
	list, err := s.Client.AppsV1beta1().SidecarSets().List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Errorf("v1beta1 list: %v %+v", err, list)
	}
}
