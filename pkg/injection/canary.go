package injection

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// overriddenPresent returns the SidecarSets of present that a matching canary, to inject or
// present too, names as its base, the present canaries that name them, and present without
// either. Such a base was injected earlier in the admission by a policy compiled before its
// canary existed, which kube-apiserver still runs for a moment; the webhook alone would have left
// it out. Its sidecars may share names with the canary's, so a present canary is taken out with
// it and injected again.
func overriddenPresent(views []view, present []*v1alpha1.SidecarSet) (bases, canaries, rest []*v1alpha1.SidecarSet) {
	if len(present) == 0 {
		return nil, nil, present
	}
	named := map[string]bool{}
	for i := range views {
		if base, ok := apps.CanaryBase(views[i].ss.Annotations); ok {
			named[base] = true
		}
	}
	for _, ss := range present {
		if base, ok := apps.CanaryBase(ss.Annotations); ok {
			named[base] = true
		}
	}
	if len(named) == 0 {
		return nil, nil, present
	}
	withdrawn := map[string]bool{}
	for _, ss := range present {
		if named[ss.Name] {
			bases = append(bases, ss)
			withdrawn[ss.Name] = true
		}
	}
	if len(bases) == 0 {
		return nil, nil, present
	}
	rest = make([]*v1alpha1.SidecarSet, 0, len(present))
	for _, ss := range present {
		if base, ok := apps.CanaryBase(ss.Annotations); ok && withdrawn[base] {
			canaries = append(canaries, ss)
		} else if !withdrawn[ss.Name] {
			rest = append(rest, ss)
		}
	}
	return bases, canaries, rest
}

// withdraw takes out of pod what ss injected into it: its containers and init containers (hot
// upgrade twins included), its volumes no container left mounts (not one of their names the pod
// declared itself, differently), and its entries in the hash annotations and the injected list
// (the annotations themselves once empty). The pod's own containers of a sidecar's name were
// replaced by the injection and cannot be told apart; imagePullSecrets are left, as they may be
// the pod's.
func withdraw(pod *corev1.Pod, ss *v1alpha1.SidecarSet) error {
	names := podNames(ss)
	keep := func(cs []corev1.Container) []corev1.Container {
		var out []corev1.Container
		for _, c := range cs {
			if !names[c.Name] {
				out = append(out, c)
			}
		}
		return out
	}
	pod.Spec.Containers, pod.Spec.InitContainers = keep(pod.Spec.Containers), keep(pod.Spec.InitContainers)
	mounted := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				mounted[m.Name] = true
			}
			for _, d := range c.VolumeDevices {
				mounted[d.Name] = true
			}
		}
	}
	own := map[string]*corev1.Volume{}
	for i := range ss.Spec.Volumes {
		own[ss.Spec.Volumes[i].Name] = &ss.Spec.Volumes[i]
	}
	var volumes []corev1.Volume
	for _, v := range pod.Spec.Volumes {
		// A volume of ss's name that the pod declared itself (a different one: the pod's win)
		// stays, mounted or not.
		if o := own[v.Name]; o == nil || mounted[v.Name] || !equality.Semantic.DeepEqual(&v, o) {
			volumes = append(volumes, v)
		}
	}
	pod.Spec.Volumes = volumes
	for _, key := range []string{sidecar.HashAnnotation, sidecar.HashWithoutImageAnnotation} {
		if _, ok := pod.Annotations[key]; !ok {
			continue
		}
		m, err := sidecar.ParseHashMap(pod.Annotations[key])
		if err != nil {
			return newError(ss.Name, "metadata.annotations["+key+"]", err)
		}
		delete(m, ss.Name)
		setOrDrop(pod, key, len(m) > 0, m.String())
	}
	if list, ok := pod.Annotations[sidecar.InjectedListAnnotation]; ok {
		var names []string
		for _, n := range sidecar.ParseInjectedList(list) {
			if n != ss.Name {
				names = append(names, n)
			}
		}
		setOrDrop(pod, sidecar.InjectedListAnnotation, len(names) > 0, sidecar.RenderInjectedList(names))
	}
	return nil
}

// podNames returns the names ss's containers and init containers have in a pod (hot upgrade
// twins included).
func podNames(ss *v1alpha1.SidecarSet) map[string]bool {
	names := map[string]bool{}
	for _, l := range []struct {
		items []v1alpha1.SidecarContainer
		init  bool
	}{{ss.Spec.Containers, false}, {ss.Spec.InitContainers, true}} {
		for i := range l.items {
			for _, n := range sidecar.PodContainerNames(&l.items[i], l.init) {
				names[n] = true
			}
		}
	}
	return names
}

// setOrDrop sets the pod's annotation key to value when keep holds, else removes it (and the
// annotations, once none is left): a pod the withdrawn SidecarSet alone was injected into has
// none of the injection's annotations, as when nothing injected it.
func setOrDrop(pod *corev1.Pod, key string, keep bool, value string) {
	if keep {
		pod.Annotations[key] = value
		return
	}
	delete(pod.Annotations, key)
	if len(pod.Annotations) == 0 {
		pod.Annotations = nil
	}
}
