package injection

import (
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/validation"
)

// withoutShadowed leaves out the NamespacedSidecarSets (named <namespace>.<name>) whose chosen
// version collides with that of a cluster SidecarSet injected into the same pod, or already in it
// (validation.Conflicts: a container or init container name, a volume defined otherwise, an
// annotation both patch). The cluster SidecarSet wins: a name a namespace editor took first never
// takes a cluster sidecar away from a pod, nor refuses the administrator's write (the conflict
// check of a cluster SidecarSet does not look at NamespacedSidecarSets). Each one left out gets
// the decision ReasonShadowed and a warning naming the collision.
func withoutShadowed(views []view, present []*v1alpha1.SidecarSet, decisions []Decision) ([]view, []Warning, error) {
	var cluster []*apps.SidecarSet
	tenants := 0
	for i := range views {
		if isNamespaced(views[i].ss.Name) {
			tenants++
			continue
		}
		c, err := injectedPart(&views[i])
		if err != nil {
			return nil, nil, err
		}
		cluster = append(cluster, c)
	}
	if tenants == 0 {
		return views, nil, nil
	}
	for _, ss := range present {
		if !isNamespaced(ss.Name) {
			c, err := internal(ss.Name, ss.Spec.Containers, ss.Spec.InitContainers, ss)
			if err != nil {
				return nil, nil, err
			}
			cluster = append(cluster, c)
		}
	}
	if len(cluster) == 0 {
		return views, nil, nil
	}
	var warnings []Warning
	shadowed := map[string]bool{}
	out := views[:0]
	for i := range views {
		v := &views[i]
		if isNamespaced(v.ss.Name) {
			w, err := shadowedBy(v, cluster)
			if err != nil {
				return nil, nil, err
			}
			if w != nil {
				warnings = append(warnings, *w)
				shadowed[v.ss.Name] = true
				continue
			}
		}
		out = append(out, *v)
	}
	for i := range decisions {
		if d := &decisions[i]; d.Matched && shadowed[d.SidecarSet] {
			d.Reason = ReasonShadowed
		}
	}
	return out, warnings, nil
}

// shadowedBy returns the warning for a NamespacedSidecarSet's view that collides with one of the
// cluster SidecarSets, nil when it collides with none.
func shadowedBy(v *view, cluster []*apps.SidecarSet) (*Warning, error) {
	mine, err := injectedPart(v)
	if err != nil {
		return nil, err
	}
	for _, c := range cluster {
		if errs := validation.Conflicts(mine, c); len(errs) > 0 {
			e := errs[0]
			return &Warning{SidecarSet: v.ss.Name, Field: e.Field, Message: "not injected: " + e.Detail +
				" (cluster SidecarSet " + c.Name + " selects the pod too, and a cluster SidecarSet wins)"}, nil
		}
	}
	return nil, nil
}

// injectedPart is what the view injects, in the internal form the conflict rules read.
func injectedPart(v *view) (*apps.SidecarSet, error) {
	return internal(v.ss.Name, v.containers, v.initContainers, &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{
		Volumes: v.volumes, PatchPodMetadata: v.patchPodMetadata}})
}

// internal converts the parts of a SidecarSet the conflict rules read.
func internal(name string, containers, initContainers []v1alpha1.SidecarContainer, rest *v1alpha1.SidecarSet) (*apps.SidecarSet, error) {
	in := &v1alpha1.SidecarSet{Spec: v1alpha1.SidecarSetSpec{Containers: containers, InitContainers: initContainers,
		Volumes: rest.Spec.Volumes, PatchPodMetadata: rest.Spec.PatchPodMetadata}}
	in.Name = name
	out := &apps.SidecarSet{}
	if err := v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet(in, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// isNamespaced reports whether name stands for a NamespacedSidecarSet (apps.NamespacedName).
func isNamespaced(name string) bool {
	_, _, ok := apps.SplitNamespacedName(name)
	return ok
}
