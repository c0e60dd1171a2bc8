package rollout

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/controller/sidecarset/inplace"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Builders shared by the tests of this package: a SidecarSet, pods injected from it and played
// by a kubelet (every container runs its spec image and is ready), the controller's in-place
// upgrade steps with the API server's generation bump, and a container restart as the kubelet
// does it.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const (
	ssName     = "ss"
	emptyImage = "empty:1"
)

// newSidecarSet returns SidecarSet "ss" with one cold sidecar "sidecar" running image, carrying
// hash annotations hash and hashNoImg. edit, when set, changes it further.
func newSidecarSet(image, hash, hashNoImg string, edit ...func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ssName,
			ResourceVersion: "100",
			Annotations:     map[string]string{sidecar.HashAnnotation: hash, sidecar.HashWithoutImageAnnotation: hashNoImg},
		},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Containers:     []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "sidecar", Image: image}}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType},
		},
		Status: v1alpha1.SidecarSetStatus{LatestRevision: ssName + "-" + hash},
	}
	for _, e := range edit {
		e(ss)
	}
	return ss
}

// withVersion returns a copy of ss whose sidecars (containers and native sidecars) all run
// image, with new hash annotations and latest revision.
func withVersion(ss *v1alpha1.SidecarSet, image, hash, hashNoImg string) *v1alpha1.SidecarSet {
	out := ss.DeepCopy()
	for sc := range sidecar.RunningContainers(out.Spec.Containers, out.Spec.InitContainers) {
		sc.Image = image
	}
	out.Annotations = map[string]string{sidecar.HashAnnotation: hash, sidecar.HashWithoutImageAnnotation: hashNoImg}
	out.Status.LatestRevision = ssName + "-" + hash
	out.ResourceVersion = out.ResourceVersion + "1"
	return out
}

func hotSidecar(name, image string) v1alpha1.SidecarContainer {
	return v1alpha1.SidecarContainer{
		Container: corev1.Container{Name: name, Image: image},
		UpgradeStrategy: v1alpha1.SidecarContainerUpgradeStrategy{
			UpgradeType: v1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage,
		},
	}
}

func nativeSidecar(name, image string) v1alpha1.SidecarContainer {
	always := corev1.ContainerRestartPolicyAlways
	return v1alpha1.SidecarContainer{Container: corev1.Container{Name: name, Image: image, RestartPolicy: &always}}
}

func intOrStr(v string) *intstr.IntOrString {
	x := intstr.Parse(v)
	return &x
}

func imageIDOf(image string) string {
	return "docker.io/library/" + image + "@sha256:" + digestOf(image)
}

func digestOf(image string) string { return fmt.Sprintf("%064x", hashString(image)) }

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func runningStatus(pod *corev1.Pod, c *corev1.Container) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: imageIDOf(c.Image),
		ContainerID: "containerd://" + pod.Name + "-" + c.Name + "-0",
		Ready:       true, Started: new(true),
		State:     corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}},
		Resources: c.Resources.DeepCopy(), // a kubelet that resizes reports them
	}
}

// newPod returns pod name in namespace "default" injected from ss and running: its app container
// "app", ss's sidecars (hot-upgrade ones as twins, X-1 working), ss's native sidecars, the
// annotations injection writes, and a status where every container runs its spec image and is
// ready. opts edit the result.
func newPod(name string, ss *v1alpha1.SidecarSet, opts ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name), Generation: 1,
			Labels:            map[string]string{"app": "web"},
			Annotations:       map[string]string{sidecar.InjectedListAnnotation: ss.Name},
			CreationTimestamp: metav1.NewTime(t0),
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
	}
	working := map[string]string{}
	for i := range ss.Spec.InitContainers {
		if sc := ss.Spec.InitContainers[i]; sidecar.IsNativeSidecar(&sc.Container) {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, sc.Container)
		}
	}
	for _, sc := range ss.Spec.Containers {
		if !sidecar.IsHotUpgrade(&sc) {
			pod.Spec.Containers = append(pod.Spec.Containers, sc.Container)
			continue
		}
		n1, n2 := sidecar.HotUpgradeNames(sc.Name)
		c1, c2 := sc.Container, sc.Container
		c1.Name, c2.Name, c2.Image = n1, n2, sc.UpgradeStrategy.HotUpgradeEmptyImage
		pod.Spec.Containers = append(pod.Spec.Containers, c1, c2)
		working[sc.Name] = n1
		pod.Annotations[sidecar.VersionAnnotation(n1)] = "1"
		pod.Annotations[sidecar.VersionAnnotation(n2)] = "0"
		pod.Annotations[sidecar.VersionAltAnnotation(n1)] = "0"
		pod.Annotations[sidecar.VersionAltAnnotation(n2)] = "1"
	}
	if len(working) > 0 {
		pod.Annotations[sidecar.WorkingHotUpgradeContainerAnnotation] = sidecar.RenderWorkingContainers(working)
	}
	list := sidecar.SidecarList(ss.Spec.Containers, ss.Spec.InitContainers)
	must(sidecar.SetHashEntry(pod.Annotations, sidecar.HashAnnotation,
		sidecar.NewHashEntry(ss.Name, ss.Annotations[sidecar.HashAnnotation], ss.Status.LatestRevision, list, t0)))
	must(sidecar.SetHashEntry(pod.Annotations, sidecar.HashWithoutImageAnnotation,
		sidecar.NewHashEntry(ss.Name, ss.Annotations[sidecar.HashWithoutImageAnnotation], "", list, t0)))

	pod.Status = corev1.PodStatus{
		Phase:              corev1.PodRunning,
		ObservedGeneration: 1,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		},
	}
	for i := range pod.Spec.InitContainers {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, runningStatus(pod, &pod.Spec.InitContainers[i]))
	}
	for i := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, runningStatus(pod, &pod.Spec.Containers[i]))
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Pod options.

func labelled(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func setReady(p *corev1.Pod, ready bool, at time.Time) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == corev1.PodReady {
			if c.Status != status {
				c.Status, c.LastTransitionTime = status, metav1.NewTime(at)
			}
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(at)})
}

func notReady(p *corev1.Pod) { setReady(p, false, t0) }

func readySince(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		setReady(p, false, at)
		setReady(p, true, at)
	}
}

func createdAt(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(at) }
}

// statusOf returns the status of pod container c; it panics when there is none.
func statusOf(p *corev1.Pod, c string) *corev1.ContainerStatus {
	st := sidecar.ContainerStatus(p, c)
	if st == nil {
		panic("no status for container " + c)
	}
	return st
}

// injectedFrom rewrites the pod's hash entries as if it had been injected from another version
// (hash, hashNoImg) of the SidecarSet.
func injectedFrom(hash, hashNoImg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		setHashes(p, hash, hashNoImg)
	}
}

func setHashes(p *corev1.Pod, hash, hashNoImg string) {
	must(sidecar.SetHashEntry(p.Annotations, sidecar.HashAnnotation,
		sidecar.NewHashEntry(ssName, hash, ssName+"-"+hash, []string{"sidecar"}, t0)))
	if hashNoImg != "" {
		must(sidecar.SetHashEntry(p.Annotations, sidecar.HashWithoutImageAnnotation,
			sidecar.NewHashEntry(ssName, hashNoImg, "", []string{"sidecar"}, t0)))
	}
}

// upgradePod upgrades pod in place to ss as the controller does (inplace.Upgrade, with the
// readiness the controller passes) and plays the API server: a changed spec gets a new
// generation. It returns the changed containers.
func upgradePod(pod *corev1.Pod, ss *v1alpha1.SidecarSet, now time.Time) []string {
	changed, err := inplace.Upgrade(pod, ss, now, ReadyAndUpgraded(NewPod(pod), ss.Name))
	must(err)
	if len(changed) > 0 {
		pod.Generation++
	}
	return changed
}

// resetPod performs the hot-upgrade reset as the controller does (inplace.Reset) and plays the
// API server: a changed spec gets a new generation.
func resetPod(pod *corev1.Pod, ss *v1alpha1.SidecarSet, now time.Time) []string {
	reset := inplace.Reset(pod, ss, now)
	if len(reset) > 0 {
		pod.Generation++
	}
	return reset
}

// restart plays the kubelet restarting pod container c on its spec image after having seen the
// pod's current generation: new containerID, one more restart, the spec image and its imageID.
func restart(pod *corev1.Pod, c string) {
	st := statusOf(pod, c)
	st.RestartCount++
	st.ContainerID = fmt.Sprintf("containerd://%s-%s-%d", pod.Name, c, st.RestartCount)
	st.Image = sidecar.FindPodContainer(pod, c).Image
	st.ImageID = imageIDOf(st.Image)
	pod.Status.ObservedGeneration = pod.Generation
}

// planOf returns the plan of the pod named name in res.
func planOf(res *Result, name string) PodPlan {
	for _, pp := range res.Pods {
		if pp.Pod.Name == name {
			return pp
		}
	}
	panic("no plan for pod " + name)
}

// readyCondition reports whether the pod's Ready condition is True.
func readyCondition(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// plan plans over what the pod cache keeps of pods.
func plan(ss *v1alpha1.SidecarSet, pods []*corev1.Pod) *Result { return Plan(ss, cached(pods)) }

func cached(pods []*corev1.Pod) []*Pod {
	out := make([]*Pod, len(pods))
	for i, p := range pods {
		out[i] = NewPod(p)
	}
	return out
}

// source returns the pod of pods that p was made from.
func source(pods []*corev1.Pod, p *Pod) *corev1.Pod {
	for _, q := range pods {
		if q.Namespace == p.Namespace && q.Name == p.Name {
			return q
		}
	}
	panic("no pod " + p.Name)
}

func names(pods []*Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

func podNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// stateOf summarises plans as "name=State/Reason" for failure messages.
func stateOf(res *Result) string {
	var b strings.Builder
	for _, pp := range res.Pods {
		fmt.Fprintf(&b, "%s=%s/%s ", pp.Pod.Name, pp.State, pp.Reason)
	}
	return b.String()
}
