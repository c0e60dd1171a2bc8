package sidecarset

import (
	"strconv"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

var metav1UpdateOptions = metav1.UpdateOptions{}

// PodSource lists the pods a SidecarSet selects from the main cluster's informer caches.
type PodSource struct {
	pods       corelisters.PodLister
	namespaces corelisters.NamespaceLister
}

// NewPodSource reads pods and namespaces from the given informers.
func NewPodSource(pods coreinformers.PodInformer, namespaces coreinformers.NamespaceInformer) *PodSource {
	return &PodSource{pods: pods.Lister(), namespaces: namespaces.Lister()}
}

// Select returns the pods selected by spec.selector in the namespaces spec.namespace and
// spec.namespaceSelector allow (all namespaces when neither is set).
func (s *PodSource) Select(ss *v1alpha1.SidecarSet) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil {
		return nil, err
	}
	namespaces, err := s.selectNamespaces(ss)
	if err != nil {
		return nil, err
	}
	if namespaces == nil {
		return s.pods.List(sel)
	}
	var out []*corev1.Pod
	for _, ns := range namespaces {
		pods, err := s.pods.Pods(ns).List(sel)
		if err != nil {
			return nil, err
		}
		out = append(out, pods...)
	}
	return out, nil
}

// selectNamespaces returns the namespaces to look in, nil meaning all.
func (s *PodSource) selectNamespaces(ss *v1alpha1.SidecarSet) ([]string, error) {
	if ss.Spec.Namespace != "" {
		return []string{ss.Spec.Namespace}, nil
	}
	if ss.Spec.NamespaceSelector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.NamespaceSelector)
	if err != nil {
		return nil, err
	}
	list, err := s.namespaces.List(sel)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, ns := range list {
		out = append(out, ns.Name)
	}
	return out, nil
}

// get returns the cached pod, or nil.
func (s *PodSource) get(namespace, name string) *corev1.Pod {
	p, err := s.pods.Pods(namespace).Get(name)
	if err != nil {
		return nil
	}
	return p
}

// podHandler enqueues the SidecarSets a pod names in its injected-list annotation whenever the
// pod appears, changes or goes away.
func podHandler(enqueue func(string), expect *expectations) cache.ResourceEventHandler {
	notify := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		for _, name := range sidecar.ParseInjectedList(pod.Annotations[sidecar.InjectedListAnnotation]) {
			enqueue(name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: notify,
		UpdateFunc: func(old, cur interface{}) {
			if old.(*corev1.Pod).ResourceVersion != cur.(*corev1.Pod).ResourceVersion {
				notify(cur)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if pod, ok := obj.(*corev1.Pod); ok {
				expect.forget(pod.Namespace + "/" + pod.Name)
			}
			notify(obj)
		},
	}
}

// StripPod is the pod informer's transform: it keeps only what planning reads (metadata without
// managed fields, owners and kubectl's last-applied copy; container names, images and restart
// policies; container statuses without their state details but a waiting reason; the Ready and
// SidecarSetUpgradable conditions, the latter with its message) and shares the strings many pods
// repeat (images, image IDs, label and annotation keys, namespaces), so that tens of thousands of
// cached pods stay small.
func StripPod(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	pod.ManagedFields, pod.OwnerReferences, pod.Finalizers, pod.GenerateName = nil, nil, nil, ""
	pod.Namespace = intern(pod.Namespace)
	delete(pod.Annotations, corev1.LastAppliedConfigAnnotation)
	pod.Labels = internMap(pod.Labels, true)
	pod.Annotations = internMap(pod.Annotations, false)
	pod.Spec = corev1.PodSpec{
		NodeName:       intern(pod.Spec.NodeName),
		Containers:     stripContainers(pod.Spec.Containers),
		InitContainers: stripContainers(pod.Spec.InitContainers),
	}
	pod.Status = corev1.PodStatus{
		Phase:                 pod.Status.Phase,
		ObservedGeneration:    pod.Status.ObservedGeneration,
		Conditions:            keepConditions(pod.Status.Conditions),
		ContainerStatuses:     stripStatuses(pod.Status.ContainerStatuses),
		InitContainerStatuses: stripStatuses(pod.Status.InitContainerStatuses),
	}
	return pod, nil
}

// intern returns the canonical copy of s.
func intern(s string) string { return unique.Make(s).Value() }

// internMap rebuilds m with interned keys (and values when values is set).
func internMap(m map[string]string, values bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if values {
			v = intern(v)
		}
		out[intern(k)] = v
	}
	return out
}

func stripContainers(in []corev1.Container) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: intern(c.Name), Image: intern(c.Image), RestartPolicy: c.RestartPolicy}
	}
	return out
}

func stripStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: intern(s.Name), Image: intern(s.Image), ImageID: intern(s.ImageID),
			ContainerID: s.ContainerID, Ready: s.Ready, RestartCount: s.RestartCount}
		if s.State.Waiting != nil {
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: intern(s.State.Waiting.Reason)}
		}
	}
	return out
}

// keepConditions keeps the conditions planning reads, in a new slice: Ready (without message)
// and SidecarSetUpgradable (its message is data).
func keepConditions(in []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range in {
		switch c.Type {
		case corev1.PodReady:
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime})
		case sidecar.UpgradableCondition:
			out = append(out, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
				LastTransitionTime: c.LastTransitionTime})
		}
	}
	return out
}

// expectations remembers the resourceVersions of the pods the controller wrote, so that a round
// never plans on a cache that does not show them yet (which could exceed maxUnavailable).
type expectations struct {
	mu      sync.Mutex
	pending map[string]uint64
}

func newExpectations() *expectations { return &expectations{pending: map[string]uint64{}} }

// expect records that pod (namespace/name) was written at resourceVersion rv.
func (e *expectations) expect(key, rv string) {
	v, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pending[key] = v
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pending, key)
}

// satisfied reports whether the cache shows every write to the given pods; it forgets the writes
// it sees.
func (e *expectations) satisfied(src *PodSource, pods []*corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pending) == 0 {
		return true
	}
	ok := true
	for _, p := range pods {
		key := p.Namespace + "/" + p.Name
		want, found := e.pending[key]
		if !found {
			continue
		}
		got, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
		if err != nil || got >= want || src.get(p.Namespace, p.Name) == nil {
			delete(e.pending, key)
			continue
		}
		ok = false
	}
	return ok
}
