package storage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// recordedIntake records the namespaces it is opened for, and fails with err.
type recordedIntake struct {
	mu     sync.Mutex
	opened []string
	err    error
}

func (r *recordedIntake) Open(_ context.Context, namespace string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	r.opened = append(r.opened, namespace)
	return nil
}

func (r *recordedIntake) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.opened
	r.opened = nil
	return out
}

// intakeStorages builds the storages of both kinds on one embedded etcd, opening intake.
func intakeStorages(t *testing.T, intake Intake) (cluster, namespaced SidecarSetStorage, scheme *runtime.Scheme) {
	t.Helper()
	_, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	scheme = runtime.NewScheme()
	install.Install(scheme)
	config.Codec = serializer.NewCodecFactory(scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	opts := func(resource string) optionsGetter {
		return optionsGetter{generic.RESTOptions{StorageConfig: config.ForResource(apps.Resource(resource)), Decorator: generic.UndecoratedStorage,
			DeleteCollectionWorkers: 1, ResourcePrefix: resource}}
	}
	var err error
	if cluster, err = NewStorage(scheme, opts("sidecarsets"), nil, nil, nil, intake); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.SidecarSet.Destroy)
	if namespaced, err = NewNamespacedStorage(scheme, opts("namespacedsidecarsets"), nil, nil, nil, intake, NamespaceLimits{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(namespaced.SidecarSet.Destroy)
	return cluster, namespaced, scheme
}

// clusterObject is a defaulted SidecarSet.
func clusterObject(t *testing.T, scheme *runtime.Scheme, name string) *apps.SidecarSet {
	t.Helper()
	ns := capObject(t, scheme, name)
	return &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: ns.Spec}
}

// TestIntakeOpensAfterAdmission: a write opens the intake once it has passed the strategy's
// validation and the admission chain, for its namespace alone when it is a NamespacedSidecarSet
// and for the pods with the label key its versions require ("label:KEY", every pod "" when one
// requires none) when it is a SidecarSet, deletes included; a write refused on the
// way, a dry run and the Preview action open nothing; when the intake cannot be opened the write
// is refused with 503 and not stored (nor the object deleted).
func TestIntakeOpensAfterAdmission(t *testing.T) {
	intake := &recordedIntake{}
	cluster, namespaced, scheme := intakeStorages(t, intake)
	clusterCtx := genericapirequest.WithNamespace(genericapirequest.NewContext(), "")
	refuse := func(context.Context, runtime.Object) error {
		return apierrors.NewForbidden(apps.Resource("namespacedsidecarsets"), "x", errors.New("quota exceeded"))
	}
	refuseUpdate := func(context.Context, runtime.Object, runtime.Object) error {
		return apierrors.NewForbidden(apps.Resource("namespacedsidecarsets"), "x", errors.New("denied by a policy"))
	}
	dryRun := []string{metav1.DryRunAll}
	if _, err := namespaced.SidecarSet.Create(teamA(), capObject(t, scheme, "existing"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.SidecarSet.Create(clusterCtx, clusterObject(t, scheme, "existing"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// To delete: NamespacedSidecarSets of team-b (one alone, two by a collection) and a SidecarSet.
	teamB := genericapirequest.WithNamespace(genericapirequest.NewContext(), "team-b")
	for _, name := range []string{"deleted", "deleted-by-collection-1", "deleted-by-collection-2"} {
		obj := capObject(t, scheme, name)
		obj.Namespace = "team-b"
		if _, err := namespaced.SidecarSet.Create(teamB, obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cluster.SidecarSet.Create(clusterCtx, clusterObject(t, scheme, "deleted"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	intake.take()
	remove := func(r *REST, ctx context.Context, name string, validate rest.ValidateObjectFunc, dryRun []string) error {
		_, _, err := r.Delete(ctx, name, validate, &metav1.DeleteOptions{DryRun: dryRun})
		return err
	}
	update := func(r *REST, ctx context.Context, name string, validate rest.ValidateObjectUpdateFunc, dryRun []string) error {
		_, _, err := r.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
			obj := old.DeepCopyObject()
			if ss, ok := obj.(*apps.SidecarSet); ok {
				ss.Spec.Containers[0].Image = "busybox:1.37"
			} else {
				obj.(*apps.NamespacedSidecarSet).Spec.Containers[0].Image = "busybox:1.37"
			}
			return obj, nil
		}), rest.ValidateAllObjectFunc, validate, false, &metav1.UpdateOptions{DryRun: dryRun})
		return err
	}
	rollout := func(ctx context.Context, r *RolloutREST, action apps.RolloutAction, dryRun []string) error {
		req := &apps.SidecarSetRollout{Spec: apps.SidecarSetRolloutSpec{Action: action}}
		if action == apps.RolloutActionPreview {
			req.Spec.Proposed = &capObject(t, scheme, "existing").Spec
		}
		_, err := r.Create(ctx, "existing", req, rest.ValidateAllObjectFunc, &metav1.CreateOptions{DryRun: dryRun})
		return err
	}
	for _, tc := range []struct {
		name       string
		write      func() error
		wantOpened []string
		wantErr    func(error) bool
	}{
		{name: "NamespacedSidecarSet create", wantOpened: []string{"team-a"}, write: func() error {
			_, err := namespaced.SidecarSet.Create(teamA(), capObject(t, scheme, "created"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			return err
		}},
		{name: "SidecarSet create", wantOpened: []string{"label:app"}, write: func() error {
			_, err := cluster.SidecarSet.Create(clusterCtx, clusterObject(t, scheme, "created"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			return err
		}},
		{name: "SidecarSet create requiring no label", wantOpened: []string{""}, write: func() error {
			obj := clusterObject(t, scheme, "keyless")
			obj.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"db"}}}}
			_, err := cluster.SidecarSet.Create(clusterCtx, obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			return err
		}},
		{name: "invalid spec", wantErr: apierrors.IsInvalid, write: func() error {
			obj := capObject(t, scheme, "invalid")
			obj.Spec.Containers = nil
			_, err := namespaced.SidecarSet.Create(teamA(), obj, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
			return err
		}},
		{name: "create refused by admission", wantErr: apierrors.IsForbidden, write: func() error {
			_, err := namespaced.SidecarSet.Create(teamA(), capObject(t, scheme, "refused"), refuse, &metav1.CreateOptions{})
			return err
		}},
		{name: "create dry run", write: func() error {
			_, err := namespaced.SidecarSet.Create(teamA(), capObject(t, scheme, "dry"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{DryRun: dryRun})
			return err
		}},
		{name: "NamespacedSidecarSet update", wantOpened: []string{"team-a"}, write: func() error {
			return update(namespaced.SidecarSet, teamA(), "existing", rest.ValidateAllObjectUpdateFunc, nil)
		}},
		{name: "SidecarSet update", wantOpened: []string{"label:app"}, write: func() error {
			return update(cluster.SidecarSet, clusterCtx, "existing", rest.ValidateAllObjectUpdateFunc, nil)
		}},
		{name: "SidecarSet update to another label key", wantOpened: []string{"label:tier", "label:app"}, write: func() error {
			_, _, err := cluster.SidecarSet.Update(clusterCtx, "existing", rest.DefaultUpdatedObjectInfo(nil, func(_ context.Context, _, old runtime.Object) (runtime.Object, error) {
				ss := old.DeepCopyObject().(*apps.SidecarSet)
				ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
				return ss, nil
			}), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
			return err
		}},
		{name: "NamespacedSidecarSet created by an apply", wantOpened: []string{"team-a"}, write: func() error {
			_, _, err := namespaced.SidecarSet.Update(teamA(), "applied", rest.DefaultUpdatedObjectInfo(capObject(t, scheme, "applied")),
				rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{})
			return err
		}},
		{name: "update refused by admission", wantErr: apierrors.IsForbidden, write: func() error {
			return update(namespaced.SidecarSet, teamA(), "existing", refuseUpdate, nil)
		}},
		{name: "update dry run", write: func() error {
			return update(namespaced.SidecarSet, teamA(), "existing", rest.ValidateAllObjectUpdateFunc, dryRun)
		}},
		{name: "rollout pause", wantOpened: []string{"team-a"}, write: func() error {
			return rollout(teamA(), namespaced.Rollout, apps.RolloutActionPause, nil)
		}},
		{name: "rollout resume, dry run", write: func() error {
			return rollout(teamA(), namespaced.Rollout, apps.RolloutActionResume, dryRun)
		}},
		{name: "rollout preview", write: func() error {
			return rollout(clusterCtx, cluster.Rollout, apps.RolloutActionPreview, nil)
		}},
		{name: "delete refused by admission", wantErr: apierrors.IsForbidden, write: func() error {
			return remove(namespaced.SidecarSet, teamB, "deleted", refuse, nil)
		}},
		{name: "delete dry run", write: func() error {
			return remove(namespaced.SidecarSet, teamB, "deleted", rest.ValidateAllObjectFunc, dryRun)
		}},
		{name: "NamespacedSidecarSet delete", wantOpened: []string{"team-b"}, write: func() error {
			return remove(namespaced.SidecarSet, teamB, "deleted", rest.ValidateAllObjectFunc, nil)
		}},
		{name: "SidecarSet delete", wantOpened: []string{"label:app"}, write: func() error {
			return remove(cluster.SidecarSet, clusterCtx, "deleted", rest.ValidateAllObjectFunc, nil)
		}},
		{name: "delete collection", wantOpened: []string{"team-b", "team-b"}, write: func() error {
			_, err := namespaced.SidecarSet.DeleteCollection(teamB, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{}, &metainternalversion.ListOptions{})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("the write failed: %v", err)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("the write returned %v, want a refusal", err)
			}
			if diff := cmp.Diff(tc.wantOpened, intake.take()); diff != "" {
				t.Errorf("intake opened for (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("the intake cannot be opened", func(t *testing.T) {
		intake.err = errors.New("kube-apiserver refused the configuration")
		defer func() { intake.err = nil }()
		_, err := namespaced.SidecarSet.Create(teamA(), capObject(t, scheme, "unopened"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("want 503, got %v", err)
		}
		if slices.Contains(names(t, namespaced.SidecarSet), "unopened") {
			t.Errorf("the NamespacedSidecarSet was stored although the intake could not be opened")
		}
		if err := update(cluster.SidecarSet, clusterCtx, "existing", rest.ValidateAllObjectUpdateFunc, nil); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("update: want 503, got %v", err)
		}
		if err := remove(cluster.SidecarSet, clusterCtx, "existing", rest.ValidateAllObjectFunc, nil); !apierrors.IsServiceUnavailable(err) {
			t.Errorf("delete: want 503, got %v", err)
		}
		if _, err := cluster.SidecarSet.Get(clusterCtx, "existing", &metav1.GetOptions{}); err != nil {
			t.Errorf("the SidecarSet was deleted although the intake could not be opened: %v", err)
		}
	})
}
