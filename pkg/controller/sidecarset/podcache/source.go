package podcache

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/contain"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/rollout"
)

// Source lists the pods a SidecarSet selects from the main cluster's pod informer. The
// informer keeps what planning reads of each pod (*rollout.Pod, see Transform), not the pods.
type Source struct {
	pods       cache.SharedIndexInformer
	namespaces coreinformers.NamespaceInformer
}

// NewSource reads pods and namespaces from the given informers. It sets Transform as the pod
// informer's transform, so the informer must not have started and its lister must not be used.
func NewSource(pods coreinformers.PodInformer, namespaces coreinformers.NamespaceInformer) (*Source, error) {
	inf := pods.Informer()
	if err := inf.SetTransform(Transform); err != nil {
		return nil, err
	}
	namespaces.Informer() // registers it with its factory
	return &Source{pods: inf, namespaces: namespaces}, nil
}

// HasSynced reports whether both caches are filled.
func (s *Source) HasSynced() bool {
	return s.pods.HasSynced() && s.namespaces.Informer().HasSynced()
}

// AddEventHandler adds a handler of pod events.
func (s *Source) AddEventHandler(h cache.ResourceEventHandler) error {
	_, err := s.pods.AddEventHandler(h)
	return err
}

// Select returns the pods selected by spec.selector in the namespaces spec.namespace and
// spec.namespaceSelector allow (all namespaces when neither is set).
func (s *Source) Select(ss *v1alpha1.SidecarSet) ([]*rollout.Pod, error) {
	sel, err := apps.PodSelector(ss.Spec.Selector)
	if err != nil {
		return nil, err
	}
	namespaces, err := s.selectNamespaces(ss)
	if err != nil {
		return nil, err
	}
	if namespaces == nil {
		return matching(s.pods.GetIndexer().List(), sel), nil
	}
	var out []*rollout.Pod
	for _, ns := range namespaces {
		objs, err := s.pods.GetIndexer().ByIndex(cache.NamespaceIndex, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, matching(objs, sel)...)
	}
	return out, nil
}

func matching(objs []interface{}, sel labels.Selector) []*rollout.Pod {
	out := make([]*rollout.Pod, 0, len(objs))
	for _, obj := range objs {
		if p, ok := obj.(*rollout.Pod); ok && sel.Matches(p.Labels) {
			out = append(out, p)
		}
	}
	return out
}

// selectNamespaces returns the namespaces to look in, nil meaning all: those apps.SelectsNamespace
// selects, without listing namespaces when spec.namespace or no namespaceSelector decides.
func (s *Source) selectNamespaces(ss *v1alpha1.SidecarSet) ([]string, error) {
	switch {
	case ss.Spec.Namespace != "":
		return []string{ss.Spec.Namespace}, nil
	case ss.Spec.NamespaceSelector == nil:
		return nil, nil
	}
	list, err := s.namespaces.Lister().List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range list {
		ok, err := apps.SelectsNamespace(ss.Spec.Namespace, ss.Spec.NamespaceSelector, ns.Name, ns.Labels)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, ns.Name)
		}
	}
	return out, nil
}

// Get returns the cached pod, or nil.
func (s *Source) Get(namespace, name string) *rollout.Pod {
	obj, ok, err := s.pods.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	p, _ := obj.(*rollout.Pod)
	return p
}

// Transform is the pod informer's transform: it keeps what planning reads of a pod (see
// rollout.Pod). Other objects pass unchanged, so it may see its own output again.
func Transform(obj interface{}) (interface{}, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	var out *rollout.Pod
	err := contain.Run("pod-cache", func() error {
		out = rollout.NewPod(pod)
		return nil
	})
	if err != nil {
		// Keep the pod, with what cannot fail, and no annotations: no SidecarSet manages it.
		out = rollout.NewPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion, Labels: pod.Labels, CreationTimestamp: pod.CreationTimestamp,
			DeletionTimestamp: pod.DeletionTimestamp}})
	}
	return out, nil
}
