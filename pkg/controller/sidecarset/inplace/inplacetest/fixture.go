// Package inplacetest builds what the tests of in-place upgrades start from: a SidecarSet as the
// server stores it (defaulted, with its hash annotations and latest revision) and a pod injected
// from it by the injector and running, as a kubelet reports it.
package inplacetest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/hash"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
)

// T0 is the time pods are injected at.
var T0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// Doc is SidecarSet "ss" selecting app=web: a container log, a hot-upgrade container proxy, a
// plain init container init, a native sidecar agent, and a patchPodMetadata annotation.
const Doc = `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata: {name: ss, resourceVersion: "100"}
spec:
  selector: {matchLabels: {app: web}}
  containers:
  - name: log
    image: log:1
  - name: proxy
    image: proxy:1
    upgradeStrategy: {upgradeType: HotUpgrade, hotUpgradeEmptyImage: empty:1}
  initContainers:
  - name: init
    image: init:1
  - name: agent
    image: agent:1
    restartPolicy: Always
  patchPodMetadata:
  - annotations: {team: sidecars}
    patchPolicy: Overwrite
`

// SidecarSet decodes doc, lets edit change it, defaults it and stamps its hash annotations and
// its latest revision as the server does.
func SidecarSet(t testing.TB, doc string, edit func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
	t.Helper()
	ss := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict([]byte(doc), ss); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ss)
	}
	scheme.Default(ss)
	h, err := hash.Of(&ss.Spec)
	if err != nil {
		t.Fatal(err)
	}
	ss.Annotations = nil
	h.Stamp(ss)
	ss.Status.LatestRevision = "ss-" + h.WithImage[:5]
	return ss
}

// InjectedPod injects ss into pod "p" of namespace default (one container app, label app=web)
// and plays the kubelet: every container runs its spec image and is ready.
func InjectedPod(t testing.TB, ss *v1alpha1.SidecarSet) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid", Generation: 1, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	res, err := injection.Inject(injection.Input{Pod: pod, SidecarSets: []*v1alpha1.SidecarSet{ss}, Now: T0})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Pod.DeepCopy()
	out.Status.Phase = corev1.PodRunning
	out.Status.ObservedGeneration = out.Generation
	out.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	status := func(c corev1.Container) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha256:" + c.Image,
			ContainerID: "containerd://" + c.Name + "-0", Ready: true}
	}
	for _, c := range out.Spec.Containers {
		out.Status.ContainerStatuses = append(out.Status.ContainerStatuses, status(c))
	}
	for _, c := range out.Spec.InitContainers {
		out.Status.InitContainerStatuses = append(out.Status.InitContainerStatuses, status(c))
	}
	return out
}

// Images returns the image of every container of the pod, init containers included, by name.
func Images(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		out[c.Name] = c.Image
	}
	return out
}
