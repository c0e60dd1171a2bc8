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
	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/stored"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
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

// sidecarSets is a getter of the SidecarSets that exist.
type sidecarSets map[string]bool

func (s sidecarSets) Get(_ context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	if s[name] {
		return &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	}
	return nil, apierrors.NewNotFound(apps.Resource("sidecarsets"), name)
}

// TestImportIsSafe: the server's hashes are stamped on an import without them and a different
// given value is refused; a revision of a NamespacedSidecarSet, or named for another SidecarSet,
// is refused; while its SidecarSet exists an import newer than its history, or than the newest of
// its custom version, is refused, and so is a number already used; each with its field path.
func TestImportIsSafe(t *testing.T) {
	_, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	scheme := runtime.NewScheme()
	install.Install(scheme)
	config.Codec = serializer.NewCodecFactory(scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	store, err := NewStore(scheme, optionsGetter{generic.RESTOptions{
		StorageConfig: config.ForResource(apps.Resource("sidecarsetrevisions")), Decorator: generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1, ResourcePrefix: "sidecarsetrevisions",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Destroy)
	r := NewREST(store, sidecarSets{"live": true})
	ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceNone)
	create := func(rev *apps.SidecarSetRevision) (runtime.Object, error) {
		return r.Create(ctx, rev, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	}
	revision := func(set, name string, number int64, version string) *apps.SidecarSetRevision {
		rev := imported()
		rev.Name, rev.SidecarSetName, rev.Revision = name, set, number
		rev.Labels = map[string]string{v1alpha1.SidecarSetNameLabel: set}
		if version != "" {
			rev.Labels[v1alpha1.SidecarSetCustomVersionLabel] = version
		}
		return rev
	}
	// The history of the existing SidecarSet "live": 2 (v1), 5 (v2), 8 (v1).
	for _, rev := range []*apps.SidecarSetRevision{revision("live", "live-b", 2, "v1"), revision("live", "live-e", 5, "v2"), revision("live", "live-h", 8, "v1")} {
		if _, err := store.Create(ctx, rev, nil, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := create(imported())
	if err != nil {
		t.Fatalf("an import without hashes: %v", err)
	}
	want, _ := sidecarsetHashes(imported())
	if got := obj.(*apps.SidecarSetRevision).Annotations; got[v1alpha1.SidecarSetHashAnnotation] != want.WithImage ||
		got[v1alpha1.SidecarSetHashWithoutImageAnnotation] != want.WithoutImage {
		t.Errorf("stored annotations %v, want the server's hashes %+v", got, want)
	}

	for _, tc := range []struct {
		name  string
		rev   *apps.SidecarSetRevision
		field string // "" accepted
	}{
		{"the server's hashes given", func() *apps.SidecarSetRevision {
			rev := imported()
			rev.Name = "migrate-x"
			rev.Revision = 3
			want.Stamp(rev)
			return rev
		}(), ""},
		{"a hash of other containers", func() *apps.SidecarSetRevision {
			rev := imported()
			rev.Name, rev.Revision = "migrate-y", 4
			rev.Annotations = map[string]string{v1alpha1.SidecarSetHashAnnotation: "x4czcfwwvwcx72v4v9x46vwcc4vd9zx747vf6wc8dc446dz49xzc48d4dc488598"}
			return rev
		}(), "metadata.annotations[kruise.io/sidecarset-hash]"},
		{"a hash without image of other containers", func() *apps.SidecarSetRevision {
			rev := imported()
			rev.Name, rev.Revision = "migrate-z", 5
			rev.Annotations = map[string]string{v1alpha1.SidecarSetHashWithoutImageAnnotation: "abc"}
			return rev
		}(), "metadata.annotations[kruise.io/sidecarset-hash-without-image]"},
		{"a NamespacedSidecarSet's history", revision("team-a.web", "team-a.web-1", 1, ""), "sidecarSetName"},
		{"a name of another SidecarSet", revision("live", "other-1", 1, ""), "metadata.name"},
		{"newer than the existing SidecarSet's newest", revision("live", "live-i", 9, ""), "revision"},
		{"a number of its history", revision("live", "live-e2", 5, ""), "revision"},
		{"a number of another SidecarSet's history", revision("gone", "gone-e", 5, ""), ""},
		{"older, no custom version", revision("live", "live-a", 1, ""), ""},
		{"newest of custom version v2", revision("live", "live-f", 6, "v2"), "metadata.labels[apps.kruise.io/sidecarset-custom-version]"},
		{"older than the newest of v1", revision("live", "live-g", 7, "v1"), ""},
		{"a new custom version", revision("live", "live-c", 3, "v3"), ""},
		{"any number before its SidecarSet exists", revision("later", "later-x", 99, "v1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := create(tc.rev)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: %v, want Invalid at %s", err, tc.field)
			}
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			if len(causes) != 1 || causes[0].Field != tc.field {
				t.Errorf("causes %+v, want one at %s", causes, tc.field)
			}
		})
	}
	if _, err := create(revision("live", "live-b", 2, "v1")); !apierrors.IsAlreadyExists(err) {
		t.Errorf("importing a stored revision again: %v, want AlreadyExists", err)
	}
}

func sidecarsetHashes(rev *apps.SidecarSetRevision) (hash.Hashes, error) {
	return stored.Hashes(validation.InjectedSpec(rev))
}
