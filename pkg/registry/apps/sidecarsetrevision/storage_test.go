package sidecarsetrevision

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// optionsGetter serves the REST options of the embedded etcd.
type optionsGetter struct{ opts generic.RESTOptions }

func (g optionsGetter) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return g.opts, nil
}

// newREST serves revisions from an embedded etcd, as the server stores them (v1alpha1).
func newREST(t *testing.T) *REST {
	t.Helper()
	_, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	scheme := runtime.NewScheme()
	install.Install(scheme)
	config.Codec = serializer.NewCodecFactory(scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	store, err := NewStore(scheme, optionsGetter{generic.RESTOptions{
		StorageConfig:           config.ForResource(apps.Resource("sidecarsetrevisions")),
		Decorator:               generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          "sidecarsetrevisions",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Destroy)
	return NewREST(store, nil)
}

// imported is a revision as kubectl sidecarset migrate writes an OpenKruise ControllerRevision:
// OpenKruise's name, number and labels, no controller.
func imported() *apps.SidecarSetRevision {
	return &apps.SidecarSetRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "migrate-cf96db497", Labels: map[string]string{
			v1alpha1.SidecarSetNameLabel: "migrate", "kruise.io/sidecarset-name": "migrate", "controller.kubernetes.io/hash": "cf96db497"}},
		SidecarSetName: "migrate",
		Revision:       2,
		Spec: apps.SidecarSetRevisionSpec{Containers: []apps.SidecarContainer{{Container: corev1.Container{
			Name: "sidecar1", Image: "busybox:1.36", Command: []string{"sleep", "999d"}, ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile},
			PodInjectPolicy: apps.BeforeAppContainerType, UpgradeStrategy: apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerColdUpgrade},
			ShareVolumePolicy: apps.ShareVolumePolicy{Type: apps.ShareVolumePolicyDisabled}}}},
	}
}

// TestCreateImportedRevision: a client creates a revision with the name, number and snapshot it
// gives; creating it again is AlreadyExists; a revision is refused when its number, its label or
// its snapshot is not one a SidecarSet's history could hold, with the field named.
func TestCreateImportedRevision(t *testing.T) {
	r := newREST(t)
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	create := func(rev *apps.SidecarSetRevision) (runtime.Object, error) {
		return r.Create(ctx, rev, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	}
	if _, err := create(imported()); err != nil {
		t.Fatalf("creating an imported revision: %v", err)
	}
	obj, err := r.Get(ctx, "migrate-cf96db497", &metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*apps.SidecarSetRevision)
	if got.Revision != 2 || got.SidecarSetName != "migrate" || got.Spec.Containers[0].Image != "busybox:1.36" ||
		got.Labels["kruise.io/sidecarset-name"] != "migrate" || len(got.OwnerReferences) != 0 {
		t.Errorf("stored %+v, want the imported revision as given", got)
	}
	if _, err := create(imported()); !apierrors.IsAlreadyExists(err) {
		t.Errorf("creating it again: %v, want AlreadyExists", err)
	}

	tests := []struct {
		name   string
		change func(*apps.SidecarSetRevision)
		field  string
	}{
		{"number 0", func(r *apps.SidecarSetRevision) { r.Revision = 0 }, "revision"},
		{"label of another SidecarSet", func(r *apps.SidecarSetRevision) { r.Labels[v1alpha1.SidecarSetNameLabel] = "other" },
			"metadata.labels[apps.kruise.io/sidecarset-name]"},
		{"no SidecarSet", func(r *apps.SidecarSetRevision) {
			r.SidecarSetName = ""
			delete(r.Labels, v1alpha1.SidecarSetNameLabel)
		}, "sidecarSetName"},
		{"no container", func(r *apps.SidecarSetRevision) { r.Spec.Containers = nil }, "spec.containers"},
		{"a container without an image", func(r *apps.SidecarSetRevision) { r.Spec.Containers[0].Image = "" }, "spec.containers[0].image"},
		{"a mount of no volume", func(r *apps.SidecarSetRevision) {
			r.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}
		}, "spec.containers[0].volumeMounts[0].name"},
		{"an unknown upgrade type", func(r *apps.SidecarSetRevision) { r.Spec.Containers[0].UpgradeStrategy.UpgradeType = "Warm" },
			"spec.containers[0].upgradeStrategy.upgradeType"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := imported()
			rev.Name = "refused"
			tc.change(rev)
			_, err := create(rev)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("create: %v, want Invalid naming %s", err, tc.field)
			}
			if _, err := r.Get(ctx, "refused", &metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a refused revision was stored: %v", err)
			}
		})
	}
}
