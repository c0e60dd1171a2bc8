package injection

import (
	"fmt"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// part is what one SidecarSet injects into a pod, as the collision rules read it.
type part struct {
	name     string
	podNames map[string]bool  // the pod container names of its sidecars, init and regular, twins included
	spec     *apps.SidecarSet // internal form, for validation.Conflicts
}

func newPart(name string, containers, initContainers []v1alpha1.SidecarContainer, rest *v1alpha1.SidecarSet) (*part, error) {
	p := &part{name: name, podNames: map[string]bool{}}
	for _, l := range []struct {
		items []v1alpha1.SidecarContainer
		init  bool
	}{{containers, false}, {initContainers, true}} {
		for i := range l.items {
			for _, n := range sidecar.PodContainerNames(&l.items[i], l.init) {
				p.podNames[n] = true
			}
		}
	}
	in := &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{Containers: containers, InitContainers: initContainers,
		Volumes: rest.Spec.Volumes, PatchPodMetadata: rest.Spec.PatchPodMetadata}}
	in.Name = name
	p.spec = &apps.SidecarSet{}
	if err := v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet(in, p.spec, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// viewPart is what a view injects.
func viewPart(v *view) (*part, error) {
	return newPart(v.ss.Name, v.containers, v.initContainers, &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{
		Volumes: v.volumes, PatchPodMetadata: v.patchPodMetadata}})
}

// collision says on what a and b collide in one pod, "" when they do not: a pod container name
// (init and regular containers share the pod's names; hot-upgrade twins count), then the rules of
// validation.Conflicts (a volume defined otherwise, an annotation both patch).
func collision(a, b *part) string {
	for n := range a.podNames {
		if b.podNames[n] {
			return fmt.Sprintf("container %s is also injected by %s", n, b.name)
		}
	}
	if errs := validation.Conflicts(a.spec, b.spec); len(errs) > 0 {
		return errs[0].Field + ": " + errs[0].Detail
	}
	return ""
}

// Collision says on what the sidecars of a and b would collide in a pod both select, "" when
// they would not (see collision): what makes the injector leave a NamespacedSidecarSet out of a
// pod a cluster SidecarSet is injected into.
func Collision(a, b *v1alpha1.SidecarSet) (string, error) {
	pa, err := newPart(a.Name, a.Spec.Containers, a.Spec.InitContainers, a)
	if err != nil {
		return "", err
	}
	pb, err := newPart(b.Name, b.Spec.Containers, b.Spec.InitContainers, b)
	if err != nil {
		return "", err
	}
	return collision(pa, pb), nil
}

// withoutShadowed settles the collisions between NamespacedSidecarSets (named <namespace>.<name>)
// and cluster SidecarSets in one pod (see collision). The cluster SidecarSet wins: a name a
// namespace editor took first never takes a cluster sidecar away from a pod, nor refuses the
// administrator's write (the conflict check of a cluster SidecarSet does not look at
// NamespacedSidecarSets). A NamespacedSidecarSet that collides with a cluster SidecarSet injected
// now, or earlier in the admission, is left out (decision ReasonShadowed). A cluster SidecarSet
// that collides with a NamespacedSidecarSet already in the pod (injected earlier in the admission
// by a policy kube-apiserver has not reloaded since the cluster SidecarSet was written) is left
// out of this pod rather than give it two containers of one name (decision ReasonCollidesWithPresent;
// the next pods get it). Each gets a warning.
func withoutShadowed(views []view, present []*v1alpha1.SidecarSet, decisions []Decision) ([]view, []Warning, error) {
	if !bothKinds(views, present) {
		return views, nil, nil // the common case: nothing to convert on a pod's admission
	}
	var cluster, tenants []*part
	viewParts := make([]*part, len(views))
	for i := range views {
		p, err := viewPart(&views[i])
		if err != nil {
			return nil, nil, err
		}
		viewParts[i] = p
		if isNamespaced(p.name) {
			tenants = append(tenants, p)
		} else {
			cluster = append(cluster, p)
		}
	}
	var presentTenants []*part
	for _, ss := range present {
		p, err := newPart(ss.Name, ss.Spec.Containers, ss.Spec.InitContainers, ss)
		if err != nil {
			return nil, nil, err
		}
		if isNamespaced(ss.Name) {
			presentTenants = append(presentTenants, p)
		} else {
			cluster = append(cluster, p)
		}
	}
	if len(cluster) == 0 || len(tenants)+len(presentTenants) == 0 {
		return views, nil, nil
	}
	var warnings []Warning
	left := map[string]Reason{}
	for _, p := range tenants {
		for _, c := range cluster {
			if why := collision(p, c); why != "" {
				left[p.name] = ReasonShadowed
				warnings = append(warnings, Warning{SidecarSet: p.name, Field: "spec", Message: "not injected: " + why +
					" (cluster SidecarSet " + c.name + " selects the pod too, and a cluster SidecarSet wins)"})
				break
			}
		}
	}
	for _, c := range cluster {
		if left[c.name] != "" {
			continue
		}
		for _, p := range presentTenants {
			if why := collision(c, p); why != "" && !isPresent(present, c.name) {
				left[c.name] = ReasonCollidesWithPresent
				warnings = append(warnings, Warning{SidecarSet: c.name, Field: "spec", Message: "not injected into this pod: " + why +
					", injected earlier in this admission by a policy kube-apiserver has not reloaded yet; pods created from now on get it"})
				break
			}
		}
	}
	if len(left) == 0 {
		return views, nil, nil
	}
	out := views[:0]
	for i := range views {
		if left[viewParts[i].name] == "" {
			out = append(out, views[i])
		}
	}
	for i := range decisions {
		if d := &decisions[i]; d.Matched && left[d.SidecarSet] != "" {
			d.Reason = left[d.SidecarSet]
		}
	}
	return out, warnings, nil
}

// bothKinds reports whether the pod gets or has both a NamespacedSidecarSet and a cluster
// SidecarSet, the only case where they may collide.
func bothKinds(views []view, present []*v1alpha1.SidecarSet) bool {
	var namespaced, cluster bool
	note := func(name string) {
		if isNamespaced(name) {
			namespaced = true
		} else {
			cluster = true
		}
	}
	for i := range views {
		note(views[i].ss.Name)
	}
	for _, ss := range present {
		note(ss.Name)
	}
	return namespaced && cluster
}

func isPresent(present []*v1alpha1.SidecarSet, name string) bool {
	for _, ss := range present {
		if ss.Name == name {
			return true
		}
	}
	return false
}

// isNamespaced reports whether name stands for a NamespacedSidecarSet (apps.NamespacedName).
func isNamespaced(name string) bool {
	_, _, ok := apps.SplitNamespacedName(name)
	return ok
}
