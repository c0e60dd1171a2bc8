package storage

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/admission"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// turnStorage is the namespacedsidecarsets storage on an embedded etcd, its writes taking turns
// per namespace when bytes is set; admit is its admission chain.
func turnStorage(t *testing.T, bytes bool, admit admission.Interface) (SidecarSetStorage, *runtime.Scheme) {
	t.Helper()
	_, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	scheme := runtime.NewScheme()
	install.Install(scheme)
	config.Codec = serializer.NewCodecFactory(scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	s, err := NewNamespacedStorage(scheme, optionsGetter{generic.RESTOptions{
		StorageConfig:           config.ForResource(apps.Resource("namespacedsidecarsets")),
		Decorator:               generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          "namespacedsidecarsets",
	}}, nil, nil, admit, nil, NamespaceLimits{Bytes: bytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.SidecarSet.Destroy)
	return s, scheme
}

// updateHook is an admission chain that calls onUpdate on every update it validates.
type updateHook struct{ onUpdate func() }

func (h *updateHook) Handles(admission.Operation) bool { return true }

func (h *updateHook) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() == admission.Update && h.onUpdate != nil {
		h.onUpdate()
	}
	return nil
}

// admitted reports whether a write's admission ran within a moment.
func admitted(ran <-chan struct{}) bool {
	select {
	case <-ran:
		return true
	case <-time.After(300 * time.Millisecond):
		return false
	}
}

// TestNamespaceTurns: while a write of team-a is in its admission, another write of team-a waits
// for it (creates, updates), unless turns are off; writes of other namespaces and dry runs do not
// wait; a write whose request ends while it waits gives up with a timeout.
func TestNamespaceTurns(t *testing.T) {
	in := func(namespace string) context.Context {
		return genericapirequest.WithNamespace(genericapirequest.NewContext(), namespace)
	}
	var hook *updateHook // the current case's admission chain
	for _, tc := range []struct {
		name string
		// second writes after the first is held in its admission; its admission closes ran.
		second    func(*testing.T, SidecarSetStorage, *runtime.Scheme, chan struct{}) error
		turns     bool
		waits     bool
		wantError func(error) bool
	}{
		{name: "create after create", turns: true, waits: true, second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
			r := st.SidecarSet
			_, err := r.Create(in("team-a"), capObject(t, s, "second"), closing(ran), &metav1.CreateOptions{})
			return err
		}},
		{name: "update after create", turns: true, waits: true, second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
			r := st.SidecarSet
			_, _, err := r.Update(in("team-a"), "stored", rest.DefaultUpdatedObjectInfo(capObject(t, s, "stored")), nil,
				func(context.Context, runtime.Object, runtime.Object) error { close(ran); return nil }, false, &metav1.UpdateOptions{})
			return err
		}},
		{name: "rollout action after create", turns: true, waits: true, second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
			hook.onUpdate = func() { close(ran) }
			_, err := st.Rollout.Create(in("team-a"), "stored", &apps.SidecarSetRollout{Spec: apps.SidecarSetRolloutSpec{Action: apps.RolloutActionPause}},
				nil, &metav1.CreateOptions{})
			return err
		}},
		{name: "without turns", turns: false, waits: false, second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
			r := st.SidecarSet
			_, err := r.Create(in("team-a"), capObject(t, s, "second"), closing(ran), &metav1.CreateOptions{})
			return err
		}},
		{name: "another namespace", turns: true, waits: false, second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
			r := st.SidecarSet
			other := capObject(t, s, "second")
			other.Namespace = "team-b"
			_, err := r.Create(in("team-b"), other, closing(ran), &metav1.CreateOptions{})
			return err
		}},
		{name: "a dry run", turns: true, waits: false, second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
			r := st.SidecarSet
			_, err := r.Create(in("team-a"), capObject(t, s, "second"), closing(ran), &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
		{name: "a request ending while it waits", turns: true, waits: true, wantError: apierrors.IsTimeout,
			second: func(t *testing.T, st SidecarSetStorage, s *runtime.Scheme, ran chan struct{}) error {
				r := st.SidecarSet
				ctx, cancel := context.WithTimeout(in("team-a"), 100*time.Millisecond)
				defer cancel()
				_, err := r.Create(ctx, capObject(t, s, "second"), closing(ran), &metav1.CreateOptions{})
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook = &updateHook{}
			st, scheme := turnStorage(t, tc.turns, hook)
			r := st.SidecarSet
			if _, err := r.Create(in("team-a"), capObject(t, scheme, "stored"), rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			held, release := make(chan struct{}), make(chan struct{})
			firstDone := make(chan error, 1)
			go func() {
				_, err := r.Create(in("team-a"), capObject(t, scheme, "first"), func(context.Context, runtime.Object) error {
					close(held)
					<-release
					return nil
				}, &metav1.CreateOptions{})
				firstDone <- err
			}()
			<-held
			ran, secondDone := make(chan struct{}), make(chan error, 1)
			go func() { secondDone <- tc.second(t, st, scheme, ran) }()
			if got := admitted(ran); got == tc.waits {
				t.Errorf("the second write admitted while the first was: %v, want %v", got, !tc.waits)
			}
			if tc.wantError != nil {
				if err := <-secondDone; !tc.wantError(err) {
					t.Errorf("the second write: %v", err)
				}
				close(release)
				if err := <-firstDone; err != nil {
					t.Errorf("the first write: %v", err)
				}
				return
			}
			close(release)
			if err := <-firstDone; err != nil {
				t.Errorf("the first write: %v", err)
			}
			if err := <-secondDone; err != nil {
				t.Errorf("the second write: %v", err)
			}
			if tc.waits && !admitted(ran) {
				t.Error("the second write was never admitted")
			}
		})
	}
}

// closing is a create admission that closes ran.
func closing(ran chan struct{}) rest.ValidateObjectFunc {
	return func(context.Context, runtime.Object) error {
		close(ran)
		return nil
	}
}
