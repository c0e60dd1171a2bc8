package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
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
	"github.com/sidecarset/apiserver/pkg/namespacecap"
)

// optionsGetter serves the REST options of the embedded etcd.
type optionsGetter struct{ opts generic.RESTOptions }

func (g optionsGetter) GetRESTOptions(schema.GroupResource, runtime.Object) (generic.RESTOptions, error) {
	return g.opts, nil
}

// capReplicas builds n namespacedsidecarsets storages on one embedded etcd, as n replicas of the
// server, holding limit with a cache that counts cached.
func capReplicas(t testing.TB, n int, limit int, cached func(string) (int, error)) ([]*REST, *runtime.Scheme) {
	t.Helper()
	_, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	scheme := runtime.NewScheme()
	install.Install(scheme)
	config.Codec = serializer.NewCodecFactory(scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	var out []*REST
	for range n {
		s, err := NewNamespacedStorage(scheme, optionsGetter{generic.RESTOptions{
			StorageConfig:           config.ForResource(apps.Resource("namespacedsidecarsets")),
			Decorator:               generic.UndecoratedStorage,
			DeleteCollectionWorkers: 1,
			ResourcePrefix:          "namespacedsidecarsets",
		}}, nil, nil, nil, nil, NamespaceLimits{Cap: NamespaceCap{Limit: namespacecap.Limit(limit), Cached: cached}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.SidecarSet.Destroy)
		out = append(out, s.SidecarSet)
	}
	return out, scheme
}

// capObject is a defaulted NamespacedSidecarSet of namespace team-a.
func capObject(t testing.TB, scheme *runtime.Scheme, name string) *apps.NamespacedSidecarSet {
	t.Helper()
	in := &v1alpha1.NamespacedSidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:   &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Containers: []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: name, Image: "busybox:1.36"}}},
		}}
	scheme.Default(in)
	out := &apps.NamespacedSidecarSet{}
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

func teamA() context.Context {
	return genericapirequest.WithNamespace(genericapirequest.NewContext(), "team-a")
}

// names lists the stored objects of team-a.
func names(t *testing.T, r *REST) []string {
	t.Helper()
	obj, err := r.List(teamA(), &metainternalversion.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range obj.(*apps.NamespacedSidecarSetList).Items {
		out = append(out, o.Name)
	}
	return out
}

func isCapRefusal(err error, limit int) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), fmt.Sprintf("%s=%d", namespacecap.Flag, limit))
}

// TestCreatesRacingOverReplicas: 30 creates at once over two replicas in a namespace one below a
// cap of 3: exactly one passes, the others are refused naming the flag and not stored.
func TestCreatesRacingOverReplicas(t *testing.T) {
	const limit = 3
	replicas, scheme := capReplicas(t, 2, limit, func(string) (int, error) { return limit - 1, nil })
	for i := range limit - 1 {
		if _, err := replicas[0].Create(teamA(), capObject(t, scheme, fmt.Sprintf("before-%d", i)), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, 30)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = replicas[i%2].Create(teamA(), capObject(t, scheme, fmt.Sprintf("burst-%02d", i)), rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
		}()
	}
	wg.Wait()
	passed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			passed++
		case !isCapRefusal(err, limit):
			t.Errorf("burst-%02d: want Forbidden naming the flag, got %v", i, err)
		}
	}
	if got := names(t, replicas[1]); passed != 1 || len(got) != limit {
		t.Errorf("%d creates passed, %d stored %v; want 1 and %d", passed, len(got), got, limit)
	}
}

// TestSettling covers the paths of one create near the cap (and one far from it) in a namespace
// that already holds the cap (2, or as the case says).
func TestSettling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int // 2 when zero
		cached func(string) (int, error)
		write  func(*REST, *apps.NamespacedSidecarSet) error
		// stored is whether the object is stored afterwards, refused whether the write was refused.
		stored, refused bool
	}{
		{name: "create", cached: count(2), refused: true, write: create(&metav1.CreateOptions{})},
		{name: "with a finalizer", cached: count(2), refused: true, write: func(r *REST, o *apps.NamespacedSidecarSet) error {
			o.Finalizers = []string{"example.com/keep"}
			return create(&metav1.CreateOptions{})(r, o)
		}},
		{name: "server-side apply of a new object", cached: count(2), refused: true, write: func(r *REST, o *apps.NamespacedSidecarSet) error {
			_, created, err := r.Update(teamA(), o.Name, rest.DefaultUpdatedObjectInfo(o), rest.ValidateAllObjectFunc,
				rest.ValidateAllObjectUpdateFunc, true, &metav1.UpdateOptions{})
			if err == nil && !created {
				return errors.New("not created")
			}
			return err
		}},
		{name: "cache not synced counts as near", cached: func(string) (int, error) { return 0, errors.New("not synced") },
			refused: true, write: create(&metav1.CreateOptions{})},
		{name: "dry run is not stored", cached: count(2), write: create(&metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})},
		// The cache alone says far: the create costs the write only (the admission check in
		// front refuses it when the cache does not lag).
		{name: "far from the cap", limit: 30, cached: count(0), stored: true, write: create(&metav1.CreateOptions{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := max(tc.limit, 2)
			replicas, scheme := capReplicas(t, 1, limit, tc.cached)
			r := replicas[0]
			for i := range limit {
				if _, err := r.Store.Create(teamA(), capObject(t, scheme, fmt.Sprintf("before-%d", i)), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			err := tc.write(r, capObject(t, scheme, "extra"))
			if refused := isCapRefusal(err, limit); refused != tc.refused || (!refused && err != nil) {
				t.Errorf("write: refused %v (%v), want refused %v", refused, err, tc.refused)
			}
			got := names(t, r)
			if stored := len(got) == limit+1; stored != tc.stored {
				t.Errorf("stored %v, want extra stored %v", got, tc.stored)
			}
		})
	}
}

func count(n int) func(string) (int, error) { return func(string) (int, error) { return n, nil } }

func create(opts *metav1.CreateOptions) func(*REST, *apps.NamespacedSidecarSet) error {
	return func(r *REST, o *apps.NamespacedSidecarSet) error {
		_, err := r.Create(teamA(), o, rest.ValidateAllObjectFunc, opts)
		return err
	}
}

// BenchmarkNamespacedCreate measures a create without a cap, far from the cap (what it costs
// besides the write: a count in the cache and the namespace's in-flight count) and near it (the
// settling read at the create's revision).
func BenchmarkNamespacedCreate(b *testing.B) {
	for _, bc := range []struct {
		name   string
		limit  int
		cached int
	}{
		{"no cap", 0, 0},
		{"far from the cap", 1 << 30, 0},
		{"near the cap", 1 << 30, 1<<30 - 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			replicas, scheme := capReplicas(b, 1, bc.limit, count(bc.cached))
			objs := make([]*apps.NamespacedSidecarSet, b.N)
			for i := range objs {
				objs[i] = capObject(b, scheme, fmt.Sprintf("bench-%d", i))
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := replicas[0].Create(teamA(), objs[i], rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
