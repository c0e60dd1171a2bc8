package bytebudget

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/revision"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// MeasureSidecarSet measures a stored NamespacedSidecarSet in the form the server's informer holds
// it: the SidecarSet it takes part as (v1alpha1.AsSidecarSet).
func MeasureSidecarSet(ss *v1alpha1.SidecarSet) (Object, error) {
	n := v1alpha1.AsNamespaced(ss)
	if n == nil {
		return Object{}, fmt.Errorf("SidecarSet %s is not a NamespacedSidecarSet", ss.Name)
	}
	stored, err := encode(n)
	if err != nil {
		return Object{}, err
	}
	return measure(ss, len(stored))
}

// MeasureNamespaced measures a NamespacedSidecarSet about to be written: its size as stored, and
// its injected part read back from that encoding, as the informer will hold it (a list left empty
// in a write is absent once stored).
func MeasureNamespaced(n *v1alpha1.NamespacedSidecarSet) (Object, error) {
	stored, err := encode(n)
	if err != nil {
		return Object{}, err
	}
	back := &v1alpha1.NamespacedSidecarSet{}
	if err := json.Unmarshal(stored, back); err != nil {
		return Object{}, err
	}
	return measure(back.AsSidecarSet(), len(stored))
}

// encode returns n as the server stores it, v1alpha1 JSON with its kind, without its
// managedFields: the server's informers do not keep them, and they grow with the fields the
// object has, which the budget bounds.
func encode(n *v1alpha1.NamespacedSidecarSet) ([]byte, error) {
	typed := *n
	typed.APIVersion, typed.Kind = v1alpha1.SchemeGroupVersion.String(), "NamespacedSidecarSet"
	typed.ManagedFields = nil
	return json.Marshal(&typed)
}

// measure completes the measure of ss, stored in size bytes, with its injected part and the size
// of its revision: revision.New's, with what storage adds (uid, resourceVersion, creation time)
// and the longest name the revision may have, so within a few bytes of the revision recorded.
func measure(ss *v1alpha1.SidecarSet, size int) (Object, error) {
	rev := revision.New(ss, ss.Name+"-"+strings.Repeat("x", maxHashLength), 1)
	rev.APIVersion, rev.Kind = v1alpha1.SchemeGroupVersion.String(), "SidecarSetRevision"
	rev.UID = types.UID(strings.Repeat("0", len("00000000-0000-0000-0000-000000000000")))
	rev.ResourceVersion, rev.CreationTimestamp = strings.Repeat("0", 10), metav1.NewTime(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	stored, err := json.Marshal(rev)
	if err != nil {
		return Object{}, err
	}
	injected, err := digest(rev.Spec)
	if err != nil {
		return Object{}, err
	}
	return Object{Name: ss.Name, Bytes: int64(size), Injected: injected, RevisionBytes: int64(len(stored))}, nil
}

// maxHashLength is the longest suffix of a revision name: the safe-encoded decimal of a 32-bit
// hash (revision.Name).
const maxHashLength = 10

// MeasureRevision measures a stored SidecarSetRevision.
func MeasureRevision(r *v1alpha1.SidecarSetRevision) (Revision, error) {
	typed := *r
	typed.APIVersion, typed.Kind = v1alpha1.SchemeGroupVersion.String(), "SidecarSetRevision"
	stored, err := json.Marshal(&typed)
	if err != nil {
		return Revision{}, err
	}
	injected, err := digest(r.Spec)
	if err != nil {
		return Revision{}, err
	}
	return Revision{SidecarSet: r.SidecarSetName, Bytes: int64(len(stored)), Injected: injected}, nil
}

// RevisionIndex is the index of the revision informer's store Meter reads, by
// IndexRevisionNamespace.
const RevisionIndex = "namespacedRevisions"

// IndexRevisionNamespace files a SidecarSetRevision of a NamespacedSidecarSet under the
// NamespacedSidecarSet's namespace; revisions of cluster SidecarSets are not filed.
func IndexRevisionNamespace(obj any) ([]string, error) {
	if r, ok := obj.(*v1alpha1.SidecarSetRevision); ok {
		if ns, _, ok := v1alpha1.SplitNamespacedName(r.SidecarSetName); ok {
			return []string{ns}, nil
		}
	}
	return nil, nil
}

// Meter measures namespaces from the server's informers: the SidecarSet informer of both kinds
// (NamespacedSidecarSets as the SidecarSets they take part as), indexed by namespace under
// ObjectIndex, and the revision informer, indexed under RevisionIndex. Each object's measure is
// kept by UID and resourceVersion.
type Meter struct {
	Objects     cache.Indexer
	ObjectIndex string
	Revisions   cache.Indexer

	objects   measures[Object]
	revisions measures[Revision]
}

// Usage returns what namespace stores, as the informers hold it.
func (m *Meter) Usage(namespace string) (Usage, error) {
	objs, err := m.Objects.ByIndex(m.ObjectIndex, namespace)
	if err != nil {
		return Usage{}, err
	}
	revs, err := m.Revisions.ByIndex(RevisionIndex, namespace)
	if err != nil {
		return Usage{}, err
	}
	objects := make([]Object, 0, len(objs))
	for _, obj := range objs {
		ss, ok := obj.(*v1alpha1.SidecarSet)
		if !ok {
			continue
		}
		o, err := m.objects.get(ss, func() (Object, error) { return MeasureSidecarSet(ss) })
		if err != nil {
			return Usage{}, err
		}
		objects = append(objects, o)
	}
	revisions := make([]Revision, 0, len(revs))
	for _, obj := range revs {
		r, ok := obj.(*v1alpha1.SidecarSetRevision)
		if !ok {
			continue
		}
		rev, err := m.revisions.get(r, func() (Revision, error) { return MeasureRevision(r) })
		if err != nil {
			return Usage{}, err
		}
		revisions = append(revisions, rev)
	}
	m.objects.sweep(m.Objects)
	m.revisions.sweep(m.Revisions)
	return Measure(objects, revisions), nil
}

// measures keeps the measure of each object at its resourceVersion, by UID.
type measures[T any] struct {
	mu   sync.Mutex
	byID map[types.UID]measured[T]
	// sweepAbove is the size above which the next sweep looks for objects gone.
	sweepAbove int
}

type measured[T any] struct {
	key, resourceVersion string
	m                    T
}

// get returns the measure of obj, measuring it only when its version changed since the last call.
func (c *measures[T]) get(obj metav1.Object, measure func() (T, error)) (T, error) {
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	c.mu.Lock()
	e, ok := c.byID[uid]
	c.mu.Unlock()
	if ok && e.resourceVersion == rv && uid != "" {
		return e.m, nil
	}
	m, err := measure()
	if err != nil || uid == "" {
		return m, err
	}
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return m, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = map[types.UID]measured[T]{}
	}
	c.byID[uid] = measured[T]{key: key, resourceVersion: rv, m: m}
	return m, nil
}

// sweep forgets the objects no longer in store once the cache has doubled (plus a margin) since
// the last sweep: amortized over the measures that filled it, a write costs a constant share of a
// sweep.
func (c *measures[T]) sweep(store cache.Store) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) <= c.sweepAbove {
		return
	}
	for uid, e := range c.byID {
		obj, exists, err := store.GetByKey(e.key)
		if err != nil || !exists {
			delete(c.byID, uid)
			continue
		}
		if m, err := meta.Accessor(obj); err != nil || m.GetUID() != uid {
			delete(c.byID, uid)
		}
	}
	c.sweepAbove = 2*len(c.byID) + 64
}
