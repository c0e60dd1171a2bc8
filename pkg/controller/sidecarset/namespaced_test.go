package sidecarset

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
)

func storedNamespaced() *v1alpha1.NamespacedSidecarSet {
	n := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "logs", UID: "n-uid",
		ResourceVersion: "5", Generation: 2, Annotations: map[string]string{v1alpha1.SidecarSetHashAnnotation: "h"}}}
	n.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	n.Status = v1alpha1.SidecarSetStatus{ObservedGeneration: 1, LatestRevision: "team-a.logs-old"}
	return n
}

// TestWriteStatusNamespaced: the status of a NamespacedSidecarSet is written through
// namespacedsidecarsets/status of its namespace, and on a conflict read again from there; the
// sidecarsets resource is never touched.
func TestWriteStatusNamespaced(t *testing.T) {
	for _, conflicts := range []int{0, 1} {
		n := storedNamespaced()
		client := fake.NewSimpleClientset(n)
		left := conflicts
		client.PrependReactor("update", "namespacedsidecarsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "status" || left == 0 {
				return false, nil, nil
			}
			left--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "namespacedsidecarsets"}, n.Name, errors.New("stale"))
		})
		c := &Controller{client: client}
		cached := n.AsSidecarSet()
		ss := cached.DeepCopy()
		ss.Status.LatestRevision = "team-a.logs-new"
		if err := c.writeStatus(context.Background(), cached, ss, nil); err != nil {
			t.Fatalf("%d conflicts: %v", conflicts, err)
		}

		type call struct{ Verb, Resource, Subresource, Namespace, Name string }
		var got []call
		for _, a := range client.Actions() {
			name := ""
			switch a := a.(type) {
			case k8stesting.GetAction:
				name = a.GetName()
			case k8stesting.UpdateAction:
				name = a.GetObject().(*v1alpha1.NamespacedSidecarSet).Name
			}
			got = append(got, call{a.GetVerb(), a.GetResource().Resource, a.GetSubresource(), a.GetNamespace(), name})
		}
		write := call{"update", "namespacedsidecarsets", "status", "team-a", "logs"}
		want := []call{write}
		if conflicts == 1 {
			want = []call{write, {"get", "namespacedsidecarsets", "", "team-a", "logs"}, write}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%d conflicts: calls (-want +got):\n%s", conflicts, diff)
		}

		stored, err := client.AppsV1alpha1().NamespacedSidecarSets("team-a").Get(context.Background(), "logs", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus := v1alpha1.SidecarSetStatus{ObservedGeneration: 2, LatestRevision: "team-a.logs-new"}
		if diff := cmp.Diff(wantStatus, stored.Status); diff != "" {
			t.Errorf("%d conflicts: stored status (-want +got):\n%s", conflicts, diff)
		}
		if stored.Spec.Namespace != "" {
			t.Errorf("%d conflicts: the status write set spec.namespace %q", conflicts, stored.Spec.Namespace)
		}
	}
}

// TestUpdateStatusRoutes: updateStatus writes a SidecarSet's status through sidecarsets/status and
// a NamespacedSidecarSet's, as it is, through namespacedsidecarsets/status of its namespace.
func TestUpdateStatusRoutes(t *testing.T) {
	n := storedNamespaced()
	mesh := &v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", ResourceVersion: "3"}}
	client := fake.NewSimpleClientset(n, mesh)
	c := &Controller{client: client}

	engine := n.AsSidecarSet()
	engine.Status.MatchedPods = 3
	if err := c.updateStatus(context.Background(), engine); err != nil {
		t.Fatal(err)
	}
	clusterSet := mesh.DeepCopy()
	clusterSet.Status.MatchedPods = 4
	if err := c.updateStatus(context.Background(), clusterSet); err != nil {
		t.Fatal(err)
	}

	actions := client.Actions()
	if len(actions) != 2 {
		t.Fatalf("actions %v, want two status updates", actions)
	}
	u := actions[0].(k8stesting.UpdateAction)
	if u.GetResource().Resource != "namespacedsidecarsets" || u.GetSubresource() != "status" || u.GetNamespace() != "team-a" {
		t.Errorf("NamespacedSidecarSet status written through %s/%s in %q", u.GetResource().Resource, u.GetSubresource(), u.GetNamespace())
	}
	want := n.DeepCopy()
	want.APIVersion, want.Kind = "apps.kruise.io/v1alpha1", "NamespacedSidecarSet"
	want.Status.MatchedPods = 3
	if diff := cmp.Diff(want, u.GetObject()); diff != "" {
		t.Errorf("written NamespacedSidecarSet (-want +got):\n%s", diff)
	}
	u = actions[1].(k8stesting.UpdateAction)
	if u.GetResource().Resource != "sidecarsets" || u.GetSubresource() != "status" || u.GetNamespace() != "" {
		t.Errorf("SidecarSet status written through %s/%s in %q", u.GetResource().Resource, u.GetSubresource(), u.GetNamespace())
	}

	got, err := c.get(context.Background(), "team-a.logs")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "team-a.logs" || got.Spec.Namespace != "team-a" || got.Status.MatchedPods != 3 {
		t.Errorf("get(team-a.logs) = %s in %q with %d matched pods, want team-a.logs in team-a with 3", got.Name, got.Spec.Namespace, got.Status.MatchedPods)
	}
	if got, err := c.get(context.Background(), "mesh"); err != nil || got.Status.MatchedPods != 4 {
		t.Errorf("get(mesh) = %v, %v", got, err)
	}
}
