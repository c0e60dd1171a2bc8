package sidecarset

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace/inplacetest"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/podcache"
	"github.com/sidecarset/apiserver/pkg/generated/clientset/versioned/fake"
	informers "github.com/sidecarset/apiserver/pkg/generated/informers/externalversions"
)

// The tests of this file drive the controller's shell (round, apply, writeStatus, the revision
// writes, the expectations) against fake clientsets. The caches are informers' indexers that a
// test fills from the fakes when it chooses (sync), so that it decides when a write shows in them.

// podsPeriod is the delay a round asks for while its last writes are not in the cache; a planned
// round that has pods left to upgrade asks for five times as much.
const podsPeriod = time.Second

var t0 = inplacetest.T0

type harness struct {
	t      *testing.T
	c      *Controller
	own    *fake.Clientset
	kube   *kubefake.Clientset
	store  *revisionStore
	events *record.FakeRecorder
	clock  *clocktesting.FakeClock
	ss     *v1alpha1.SidecarSet
	opts   Options // what New was given: newTerm builds another controller from it

	sets, revisions, pods cache.Indexer
}

// newHarness serves SidecarSet ss (stored and cached) and pods a and b, injected from old and
// running, through a controller built by New.
func newHarness(t *testing.T, old, ss *v1alpha1.SidecarSet) *harness {
	t.Helper()
	ss = ss.DeepCopy()
	ss.UID, ss.Generation, ss.ResourceVersion = "ss-uid", 2, "5"
	ss.CreationTimestamp = metav1.NewTime(t0.Add(-time.Hour))
	var objs []runtime.Object
	for i, name := range []string{"a", "b"} {
		p := inplacetest.InjectedPod(t, old)
		p.Name, p.UID, p.ResourceVersion = name, types.UID("uid-"+name), strconv.Itoa(10+i)
		objs = append(objs, p)
	}
	h := &harness{t: t, own: fake.NewClientset(ss), kube: kubefake.NewClientset(objs...), store: &revisionStore{items: map[string]*v1alpha1.SidecarSetRevision{}},
		events: record.NewFakeRecorder(100), clock: clocktesting.NewFakeClock(t0), ss: ss}
	h.kube.PrependReactor("patch", "pods", h.patchPod)
	own := informers.NewSharedInformerFactory(h.own, 0)
	kube := kubeinformers.NewSharedInformerFactory(h.kube, 0)
	src, err := podcache.NewSource(kube.Core().V1().Pods(), kube.Core().V1().Namespaces())
	if err != nil {
		t.Fatal(err)
	}
	h.opts = Options{Client: h.own, SidecarSets: own.Apps().V1alpha1().SidecarSets(), Revisions: own.Apps().V1alpha1().SidecarSetRevisions(),
		Writer: h.store, Kube: h.kube, Pods: src, Recorder: h.events, Clock: h.clock}
	h.c, err = New(h.opts)
	if err != nil {
		t.Fatal(err)
	}
	h.sets, h.revisions, h.pods = own.Apps().V1alpha1().SidecarSets().Informer().GetIndexer(), own.Apps().V1alpha1().SidecarSetRevisions().Informer().GetIndexer(), kube.Core().V1().Pods().Informer().GetIndexer()
	h.sync()
	return h
}

// sync makes the caches show what the fakes hold, as informers would once they catch up.
func (h *harness) sync() {
	h.t.Helper()
	sets, err := h.own.Tracker().List(v1alpha1.SchemeGroupVersion.WithResource("sidecarsets"), v1alpha1.SchemeGroupVersion.WithKind("SidecarSet"), "")
	if err != nil {
		h.t.Fatal(err)
	}
	pods, err := h.kube.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		h.t.Fatal(err)
	}
	var cachedPods, cachedSets, revs []interface{}
	for _, p := range pods.(*corev1.PodList).Items {
		obj, _ := podcache.Transform(&p)
		cachedPods = append(cachedPods, obj)
	}
	for i := range sets.(*v1alpha1.SidecarSetList).Items {
		cachedSets = append(cachedSets, &sets.(*v1alpha1.SidecarSetList).Items[i])
	}
	for _, r := range h.store.list() {
		revs = append(revs, r)
	}
	for _, c := range []struct {
		indexer cache.Indexer
		objs    []interface{}
	}{{h.pods, cachedPods}, {h.sets, cachedSets}, {h.revisions, revs}} {
		if err := c.indexer.Replace(c.objs, ""); err != nil {
			h.t.Fatal(err)
		}
	}
}

// newTerm replaces the controller by a new one on the same clients and caches, as a new leader
// starts: it remembers nothing the previous one did but what the objects say.
func (h *harness) newTerm() {
	h.t.Helper()
	c, err := New(h.opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.c = c
}

// round runs a round of the SidecarSet as a worker does.
func (h *harness) round() (time.Duration, error) {
	return h.c.sync(context.Background(), h.ss.Name)
}

// patchPod is kube-apiserver's part of a pod patch that the fake lacks: it checks the
// resourceVersion precondition and gives the written pod a new resourceVersion.
func (h *harness) patchPod(a k8stesting.Action) (bool, runtime.Object, error) {
	p := a.(k8stesting.PatchAction)
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	obj, err := h.kube.Tracker().Get(gvr, p.GetNamespace(), p.GetName())
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*corev1.Pod)
	var precondition struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(p.GetPatch(), &precondition); err != nil {
		return true, nil, err
	}
	if rv := precondition.Metadata.ResourceVersion; rv != "" && rv != pod.ResourceVersion {
		return true, nil, apierrors.NewConflict(gvr.GroupResource(), pod.Name, fmt.Errorf("resourceVersion %s is not %s", rv, pod.ResourceVersion))
	}
	original, err := json.Marshal(pod)
	if err != nil {
		return true, nil, err
	}
	patched, err := strategicpatch.StrategicMergePatch(original, p.GetPatch(), corev1.Pod{})
	if err != nil {
		return true, nil, err
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(patched, out); err != nil {
		return true, nil, err
	}
	rv, _ := strconv.Atoi(pod.ResourceVersion)
	out.ResourceVersion = strconv.Itoa(rv + 100)
	return true, out, h.kube.Tracker().Update(gvr, out, out.Namespace)
}

// stored returns the SidecarSet as stored.
func (h *harness) stored() *v1alpha1.SidecarSet {
	h.t.Helper()
	ss, err := h.own.AppsV1alpha1().SidecarSets().Get(context.Background(), h.ss.Name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return ss
}

// pod returns pod name as stored.
func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	p, err := h.kube.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// count returns how many requests of verb on resource (and subresource) a fake received.
func count(f interface{ Actions() []k8stesting.Action }, verb, resource, subresource string) int {
	n := 0
	for _, a := range f.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			n++
		}
	}
	return n
}

// podUpgrades returns how many pod spec patches were sent (upgrade-state writes alone excluded).
func (h *harness) podUpgrades() int {
	n := 0
	for _, a := range h.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "" &&
			strings.Contains(string(p.GetPatch()), `"spec"`) {
			n++
		}
	}
	return n
}

// stateWrites returns how many pod patches wrote the upgrade-state annotation alone.
func (h *harness) stateWrites() int {
	return count(h.kube, "patch", "pods", "") - h.podUpgrades()
}

// statusWrites returns how many status updates were sent.
func (h *harness) statusWrites() int { return count(h.own, "update", "sidecarsets", "status") }

// drain returns the events recorded so far.
func (h *harness) drain() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// revisionStore is the controller's history.Store: SidecarSetRevisions by name.
type revisionStore struct {
	mu    sync.Mutex
	items map[string]*v1alpha1.SidecarSetRevision
}

var revisionResource = schema.GroupResource{Group: v1alpha1.GroupName, Resource: "sidecarsetrevisions"}

func (s *revisionStore) Get(_ context.Context, name string) (*v1alpha1.SidecarSetRevision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.items[name]; ok {
		return r.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(revisionResource, name)
}

func (s *revisionStore) Create(_ context.Context, r *v1alpha1.SidecarSetRevision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[r.Name]; ok {
		return apierrors.NewAlreadyExists(revisionResource, r.Name)
	}
	s.items[r.Name] = r.DeepCopy()
	return nil
}

func (s *revisionStore) Update(_ context.Context, r *v1alpha1.SidecarSetRevision) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[r.Name]; !ok {
		return apierrors.NewNotFound(revisionResource, r.Name)
	}
	s.items[r.Name] = r.DeepCopy()
	return nil
}

func (s *revisionStore) Delete(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[name]; !ok {
		return apierrors.NewNotFound(revisionResource, name)
	}
	delete(s.items, name)
	return nil
}

func (s *revisionStore) list() []*v1alpha1.SidecarSetRevision {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*v1alpha1.SidecarSetRevision
	for _, r := range s.items {
		out = append(out, r.DeepCopy())
	}
	return out
}

// newImage returns the fixture SidecarSet and a version of it whose container log runs log:2.
func newImage(t *testing.T) (old, ss *v1alpha1.SidecarSet) {
	old = inplacetest.SidecarSet(t, inplacetest.Doc, nil)
	ss = inplacetest.SidecarSet(t, inplacetest.Doc, func(ss *v1alpha1.SidecarSet) { ss.Spec.Containers[0].Image = "log:2" })
	return old, ss
}
