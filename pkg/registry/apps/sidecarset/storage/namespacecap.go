package storage

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"github.com/sidecarset/apiserver/pkg/namespacecap"
)

// NamespaceCap is the per-namespace cap on NamespacedSidecarSets
// (--max-namespaced-sidecarsets-per-namespace) as the storage holds it under concurrent creates.
type NamespaceCap struct {
	// Limit is the cap; zero or less is none.
	Limit namespacecap.Limit
	// Cached counts a namespace's NamespacedSidecarSets in the replica's cache, which may lag the
	// last writes; an error (a cache not synced yet) counts as a namespace near the cap.
	Cached func(namespace string) (int, error)
}

// settleTimeout bounds the reads and the delete that settle a create once it is written; they run
// even when the client has gone, so that no create beyond the cap is left in storage.
const settleTimeout = 30 * time.Second

// capGuard settles the creates of NamespacedSidecarSets near the cap (see package namespacecap):
// once written, a create is ranked by the objects its namespace held at its revision minus one,
// and beyond the cap deleted again and refused. In one replica the creates of a namespace near the
// cap also take turns, from their admission to their settling: the admission check then counts
// the ones before, and the common race of one replica does not even write the extra objects.
type capGuard struct {
	cap NamespaceCap

	mu   sync.Mutex
	byNS map[string]*namespaceCreates
}

// namespaceCreates are the creates of one namespace in flight in this replica.
type namespaceCreates struct {
	inFlight int
	turn     chan struct{} // holds a token while a create near the cap runs
}

func newCapGuard(c NamespaceCap) *capGuard {
	if !c.Limit.Enabled() {
		return nil
	}
	return &capGuard{cap: c, byNS: map[string]*namespaceCreates{}}
}

// enter counts a create in namespace as in flight, returning the namespace's state, the creates in
// flight before it, and the function ending it.
func (g *capGuard) enter(namespace string) (*namespaceCreates, int, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.byNS[namespace]
	if c == nil {
		c = &namespaceCreates{turn: make(chan struct{}, 1)}
		g.byNS[namespace] = c
	}
	c.inFlight++
	return c, c.inFlight - 1, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if c.inFlight--; c.inFlight == 0 {
			delete(g.byNS, namespace)
		}
	}
}

// near reports whether namespace, with others creates in flight beside the cached objects, is
// near the cap.
func (g *capGuard) near(namespace string, others int) bool {
	if g.cap.Cached == nil {
		return true
	}
	n, err := g.cap.Cached(namespace)
	return err != nil || g.cap.Limit.Near(n+others)
}

// create writes obj through store and, near the cap, settles it. Far from the cap it costs what
// store.Create costs, and a count in the cache.
func (g *capGuard) create(ctx context.Context, store *genericregistry.Store, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || (opts != nil && len(opts.DryRun) > 0) {
		return store.Create(ctx, obj, validate, opts)
	}
	creates, others, leave := g.enter(namespace)
	defer leave()
	if !g.near(namespace, others) {
		return store.Create(ctx, obj, validate, opts)
	}
	select {
	case creates.turn <- struct{}{}:
		defer func() { <-creates.turn }()
	case <-ctx.Done():
		return nil, apierrors.NewTimeoutError("waiting for the other creates of the namespace, near its cap", 1)
	}
	out, err := store.Create(ctx, obj, validate, opts)
	if err != nil {
		return nil, err
	}
	return g.settle(ctx, store, out)
}

// createdByUpdate settles an object an update created (server-side apply of a new object), near
// the cap.
func (g *capGuard) createdByUpdate(ctx context.Context, store *genericregistry.Store, out runtime.Object, opts *metav1.UpdateOptions) (runtime.Object, error) {
	namespace, ok := genericapirequest.NamespaceFrom(ctx)
	if !ok || (opts != nil && len(opts.DryRun) > 0) || !g.near(namespace, 0) {
		return out, nil
	}
	return g.settle(ctx, store, out)
}

// settle keeps out, just written, when its namespace held fewer than the cap objects at its
// revision minus one; otherwise it deletes out again and returns the refusal. A count that fails
// deletes it as well: the create is refused rather than left unsettled.
func (g *capGuard) settle(ctx context.Context, store *genericregistry.Store, out runtime.Object) (runtime.Object, error) {
	obj, err := meta.Accessor(out)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	before, err := storedBefore(ctx, store, obj.GetResourceVersion(), int64(g.cap.Limit)+1)
	if err == nil && g.cap.Limit.Keeps(before) {
		return out, nil
	}
	refusal := apierrors.NewForbidden(store.DefaultQualifiedResource, obj.GetName(), g.cap.Limit.Refusal(obj.GetNamespace(), before))
	if err != nil {
		refusal = apierrors.NewInternalError(fmt.Errorf("counting the NamespacedSidecarSets of namespace %s before this one, for %s: %w",
			obj.GetNamespace(), namespacecap.Flag, err))
	}
	if err := undo(ctx, store, obj); err != nil {
		klog.ErrorS(err, "deleting a create refused by the namespace cap", "namespacedSidecarSet", klog.KObj(obj))
		return nil, apierrors.NewInternalError(fmt.Errorf("%v; deleting it again failed: %w", refusal.Error(), err))
	}
	klog.V(2).InfoS("refused a create beyond the namespace cap", "namespacedSidecarSet", klog.KObj(obj),
		"resourceVersion", obj.GetResourceVersion(), "before", before)
	return nil, refusal
}

// storedBefore counts the objects of the context's namespace at the revision before rv: it reads
// one, and storage counts the rest of the page (remainingItemCount); without that count it reads
// up to limit.
func storedBefore(ctx context.Context, store *genericregistry.Store, rv string, limit int64) (int, error) {
	r, err := strconv.ParseUint(rv, 10, 64)
	if err != nil || r < 2 {
		return 0, fmt.Errorf("the create's resourceVersion %q is not a revision", rv)
	}
	opts := &metainternalversion.ListOptions{ResourceVersion: strconv.FormatUint(r-1, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 1}
	for {
		obj, err := store.List(ctx, opts)
		if err != nil {
			return 0, err
		}
		list, err := meta.ListAccessor(obj)
		if err != nil {
			return 0, err
		}
		n := meta.LenList(obj)
		switch {
		case list.GetContinue() == "":
			return n, nil
		case list.GetRemainingItemCount() != nil:
			return n + int(*list.GetRemainingItemCount()), nil
		case opts.Limit >= limit:
			return n, nil // at least limit: beyond the cap
		}
		opts.Limit = limit
	}
}

// undo deletes obj from storage, only if it is still the object written (its UID): directly, so
// that neither finalizers nor a grace period keep it. Watchers see it created, then deleted.
func undo(ctx context.Context, store *genericregistry.Store, obj metav1.Object) error {
	key, err := store.KeyFunc(ctx, obj.GetName())
	if err != nil {
		return err
	}
	uid := obj.GetUID()
	var last error
	err = wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 5},
		func(ctx context.Context) (bool, error) {
			err := store.Storage.Delete(ctx, key, store.NewFunc(), &storage.Preconditions{UID: &uid},
				rest.ValidateAllObjectFunc, false, nil, storage.DeleteOptions{})
			switch {
			case err == nil, storage.IsNotFound(err), storage.IsInvalidObj(err): // deleted, or gone already
				return true, nil
			default:
				last = err
				return false, nil
			}
		})
	if err != nil && last != nil {
		return last
	}
	return err
}
