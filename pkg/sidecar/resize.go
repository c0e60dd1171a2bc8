package sidecar

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// This file decides the resources an in-place resize gives a pod's sidecars: the same values
// injection renders (the sidecar's resources, or what its resourcesPolicy derives from the pod's
// own containers), and whether kube-apiserver accepts the change through the pod resize
// subresource.

// ResizeTargets returns the resources each pod container of the SidecarSet's running sidecars
// (regular containers and native sidecars, both hot-upgrade twins) gets from the current spec,
// by pod container name. apps are the pod's own containers and native sidecars, the targets of a
// resourcesPolicy (see PolicyResources).
func ResizeTargets(ss *v1alpha1.SidecarSet, apps []*corev1.Container, eval ResourceEvaluator) (map[string]corev1.ResourceRequirements, error) {
	out := map[string]corev1.ResourceRequirements{}
	for sc := range RunningContainers(ss.Spec.Containers, ss.Spec.InitContainers) {
		r := sc.Resources
		if sc.ResourcesPolicy != nil {
			derived, err := PolicyResources(sc.ResourcesPolicy, apps, eval)
			if err != nil {
				return nil, fmt.Errorf("resourcesPolicy of sidecar %s: %w", sc.Name, err)
			}
			r = *derived
		}
		for _, name := range PodContainerNames(sc, false) {
			out[name] = r
		}
	}
	return out, nil
}

// OwnContainers returns the pod's own native sidecars, then its own containers (those without
// IS_INJECTED=true): the containers a resourcesPolicy derives from in a running pod.
func OwnContainers(containers, initContainers []corev1.Container) []*corev1.Container {
	var out []*corev1.Container
	for i := range initContainers {
		if c := &initContainers[i]; IsNativeSidecar(c) && !IsInjected(c) {
			out = append(out, c)
		}
	}
	for i := range containers {
		if c := &containers[i]; !IsInjected(c) {
			out = append(out, c)
		}
	}
	return out
}

// ResizeChanges returns the names of the containers (regular, then init) whose resources differ
// from their target, in pod order.
func ResizeChanges(containers, initContainers []corev1.Container, targets map[string]corev1.ResourceRequirements) []string {
	var out []string
	for _, list := range [][]corev1.Container{containers, initContainers} {
		for i := range list {
			if t, ok := targets[list[i].Name]; ok && !equality.Semantic.DeepEqual(normalized(list[i].Resources), normalized(t)) {
				out = append(out, list[i].Name)
			}
		}
	}
	return out
}

// ResizeRefusal says why kube-apiserver would refuse to resize the pod's containers (regular,
// then init, with their current resources) to targets, "" when it would not: only cpu and memory
// resize in place, a request or limit cannot be removed, a plain init container cannot be
// resized, and the pod's QoS class cannot change.
func ResizeRefusal(containers, initContainers []corev1.Container, targets map[string]corev1.ResourceRequirements) string {
	for _, c := range initContainers {
		if t, ok := targets[c.Name]; ok && !IsNativeSidecar(&c) && !equality.Semantic.DeepEqual(normalized(c.Resources), normalized(t)) {
			return fmt.Sprintf("init container %s is not a native sidecar: only running containers resize", c.Name)
		}
	}
	for _, list := range [][]corev1.Container{containers, initContainers} {
		for i := range list {
			t, ok := targets[list[i].Name]
			if !ok {
				continue
			}
			if why := resourceRefusal(list[i].Name, list[i].Resources, t); why != "" {
				return why
			}
		}
	}
	before, after := QOSClass(containers, initContainers, nil), QOSClass(containers, initContainers, targets)
	if before != after {
		return fmt.Sprintf("the pod's QoS class would change from %s to %s", before, after)
	}
	return ""
}

// resourceRefusal checks one container's change.
func resourceRefusal(name string, from, to corev1.ResourceRequirements) string {
	for _, x := range []struct {
		kind     string
		from, to corev1.ResourceList
	}{{"requests", from.Requests, to.Requests}, {"limits", from.Limits, to.Limits}} {
		for r, q := range x.from {
			t, ok := x.to[r]
			if !ok {
				return fmt.Sprintf("container %s: %s.%s cannot be removed in place", name, x.kind, r)
			}
			if q.Cmp(t) != 0 && r != corev1.ResourceCPU && r != corev1.ResourceMemory {
				return fmt.Sprintf("container %s: %s.%s cannot change in place (only cpu and memory resize)", name, x.kind, r)
			}
		}
		for r := range x.to {
			if _, ok := x.from[r]; !ok && r != corev1.ResourceCPU && r != corev1.ResourceMemory {
				return fmt.Sprintf("container %s: %s.%s cannot be added in place (only cpu and memory resize)", name, x.kind, r)
			}
		}
	}
	return ""
}

// QOSClass returns the pod's QoS class (Kubernetes' rules over cpu and memory of every container)
// with the resources of the containers named in targets replaced by their target.
func QOSClass(containers, initContainers []corev1.Container, targets map[string]corev1.ResourceRequirements) corev1.PodQOSClass {
	requested, guaranteed := false, true
	for c := range allContainers(containers, initContainers) {
		r := c.Resources
		if t, ok := targets[c.Name]; ok {
			r = t
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := r.Requests[name]
			lim, hasLim := r.Limits[name]
			requested = requested || (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero())
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !requested:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func allContainers(containers, initContainers []corev1.Container) func(func(*corev1.Container) bool) {
	return func(yield func(*corev1.Container) bool) {
		for _, list := range [][]corev1.Container{containers, initContainers} {
			for i := range list {
				if !yield(&list[i]) {
					return
				}
			}
		}
	}
}

// normalized drops empty lists, so that a missing list and an empty one compare equal.
func normalized(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Claims: slices.Clip(r.Claims)}
	if len(r.Requests) > 0 {
		out.Requests = r.Requests
	}
	if len(r.Limits) > 0 {
		out.Limits = r.Limits
	}
	if len(out.Claims) == 0 {
		out.Claims = nil
	}
	return out
}

// ResizeSettled reports whether a container's status reports the cpu and memory its spec asks
// (status nil: the kubelet reports no resources, nothing to wait for).
func ResizeSettled(spec *corev1.ResourceRequirements, status *corev1.ResourceRequirements) bool {
	if status == nil {
		return true
	}
	for _, x := range []struct{ spec, status corev1.ResourceList }{{spec.Requests, status.Requests}, {spec.Limits, status.Limits}} {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			want, ok := x.spec[name]
			got, reported := x.status[name]
			if ok && reported && want.Cmp(got) != 0 {
				return false
			}
		}
	}
	return true
}
