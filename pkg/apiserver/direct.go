package apiserver

import (
	"context"
	"errors"
	"sync/atomic"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	clientset "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned"
	typed "github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/typed/apps/v1alpha1"
)

// The server's own informers list and watch its SidecarSets, NamespacedSidecarSets and revisions
// from its storage in the process (directClient), not through the loopback: there each object was
// read from etcd and decoded, converted, encoded to JSON, compressed, sent over TLS, and decoded
// again. A new leader's list of 50,000 SidecarSets spent a third of the server's CPU in the
// loopback's encoding and decoding alone. Reading the stores keeps the first decode and the
// conversion, which are what the API serves too; every other request still goes through the
// loopback (and, until install has set the stores, these do as well).

// storeReader is what the informers read of one resource's storage.
type storeReader interface {
	rest.Lister
	rest.Watcher
}

// directStores are the stores the informers read, set once by install.
type directStores struct {
	sets, namespaced, revisions storeReader
}

// directClient is the clientset of the server's own informers: the loopback's, but for the
// lists and watches of SidecarSets, NamespacedSidecarSets and SidecarSetRevisions once the stores
// are set.
type directClient struct {
	clientset.Interface
	stores *atomic.Pointer[directStores]
	scheme *runtime.Scheme
}

func (c directClient) AppsV1alpha1() typed.AppsV1alpha1Interface {
	return directApps{AppsV1alpha1Interface: c.Interface.AppsV1alpha1(), c: c}
}

type directApps struct {
	typed.AppsV1alpha1Interface
	c directClient
}

func (a directApps) SidecarSets() typed.SidecarSetInterface {
	return directSidecarSets{SidecarSetInterface: a.AppsV1alpha1Interface.SidecarSets(), c: a.c}
}

func (a directApps) NamespacedSidecarSets(namespace string) typed.NamespacedSidecarSetInterface {
	return directNamespaced{NamespacedSidecarSetInterface: a.AppsV1alpha1Interface.NamespacedSidecarSets(namespace), c: a.c, namespace: namespace}
}

func (a directApps) SidecarSetRevisions() typed.SidecarSetRevisionInterface {
	return directRevisions{SidecarSetRevisionInterface: a.AppsV1alpha1Interface.SidecarSetRevisions(), c: a.c}
}

type directSidecarSets struct {
	typed.SidecarSetInterface
	c directClient
}

func (d directSidecarSets) List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.SidecarSetList, error) {
	return directList(ctx, d.c, sidecarSetsOf, "", opts, &v1alpha1.SidecarSetList{}, d.SidecarSetInterface.List)
}

func (d directSidecarSets) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return directWatch(ctx, d.c, sidecarSetsOf, "", opts, func() runtime.Object { return &v1alpha1.SidecarSet{} }, d.SidecarSetInterface.Watch)
}

type directNamespaced struct {
	typed.NamespacedSidecarSetInterface
	c         directClient
	namespace string
}

func (d directNamespaced) List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.NamespacedSidecarSetList, error) {
	return directList(ctx, d.c, namespacedOf, d.namespace, opts, &v1alpha1.NamespacedSidecarSetList{}, d.NamespacedSidecarSetInterface.List)
}

func (d directNamespaced) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return directWatch(ctx, d.c, namespacedOf, d.namespace, opts, func() runtime.Object { return &v1alpha1.NamespacedSidecarSet{} },
		d.NamespacedSidecarSetInterface.Watch)
}

type directRevisions struct {
	typed.SidecarSetRevisionInterface
	c directClient
}

func (d directRevisions) List(ctx context.Context, opts metav1.ListOptions) (*v1alpha1.SidecarSetRevisionList, error) {
	return directList(ctx, d.c, revisionsOf, "", opts, &v1alpha1.SidecarSetRevisionList{}, d.SidecarSetRevisionInterface.List)
}

func (d directRevisions) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return directWatch(ctx, d.c, revisionsOf, "", opts, func() runtime.Object { return &v1alpha1.SidecarSetRevision{} }, d.SidecarSetRevisionInterface.Watch)
}

// The stores of each resource.
func sidecarSetsOf(s *directStores) storeReader { return s.sets }
func namespacedOf(s *directStores) storeReader  { return s.namespaced }
func revisionsOf(s *directStores) storeReader   { return s.revisions }

// directList lists the store of the resource (of) into out once the stores are set, and through
// loopback until then.
func directList[L runtime.Object](ctx context.Context, c directClient, of func(*directStores) storeReader, namespace string, opts metav1.ListOptions, out L,
	loopback func(context.Context, metav1.ListOptions) (L, error),
) (L, error) {
	s := c.stores.Load()
	if s == nil {
		return loopback(ctx, opts)
	}
	return listInto(ctx, c.scheme, of(s), namespace, opts, out)
}

// directWatch watches the store of the resource (of) once the stores are set, and through
// loopback until then.
func directWatch(ctx context.Context, c directClient, of func(*directStores) storeReader, namespace string, opts metav1.ListOptions, newObject func() runtime.Object,
	loopback func(context.Context, metav1.ListOptions) (watch.Interface, error),
) (watch.Interface, error) {
	s := c.stores.Load()
	if s == nil {
		return loopback(ctx, opts)
	}
	return watchConverted(ctx, c.scheme, of(s), namespace, opts, newObject)
}

// listInto lists store in namespace ("": every namespace) with opts, as the API would, into out,
// a v1alpha1 list.
func listInto[L runtime.Object](ctx context.Context, scheme *runtime.Scheme, store rest.Lister, namespace string, opts metav1.ListOptions, out L) (L, error) {
	internal, err := internalListOptions(opts)
	if err != nil {
		return out, err
	}
	list, err := store.List(genericapirequest.WithNamespace(ctx, namespace), internal)
	if err != nil {
		return out, err
	}
	return out, scheme.Convert(list, out, nil)
}

// watchConverted watches store in namespace with opts, as the API would, each object converted
// to the v1alpha1 object newObject returns (a watch's error events carry a Status, left as it is).
func watchConverted(ctx context.Context, scheme *runtime.Scheme, store rest.Watcher, namespace string, opts metav1.ListOptions, newObject func() runtime.Object) (watch.Interface, error) {
	internal, err := internalListOptions(opts)
	if err != nil {
		return nil, err
	}
	w, err := store.Watch(genericapirequest.WithNamespace(ctx, namespace), internal)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		if ev.Type == watch.Error {
			return ev, true
		}
		out := newObject()
		if err := scheme.Convert(ev.Object, out, nil); err != nil {
			status := errorStatus(err)
			return watch.Event{Type: watch.Error, Object: &status}, true
		}
		ev.Object = out
		return ev, true
	}), nil
}

// internalListOptions converts the options of a v1 list or watch to the storage's.
func internalListOptions(opts metav1.ListOptions) (*metainternalversion.ListOptions, error) {
	out := &metainternalversion.ListOptions{}
	if err := metainternalversion.Convert_v1_ListOptions_To_internalversion_ListOptions(&opts, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// errorStatus is the Status of a watch event that could not be converted: the reflector then
// watches again.
func errorStatus(err error) metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: 500, Reason: metav1.StatusReasonInternalError,
		Message: errors.Join(errors.New("converting a watch event"), err).Error()}
}
