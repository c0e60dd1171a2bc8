package rollout

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// This file plans in-place resizes: a pod whose sidecars differ from the current spec in images
// and resources only is upgraded in place, its resources through the pod resize subresource. The
// kubelet reports a resize in the pod's PodResizePending and PodResizeInProgress conditions and
// the containers' status resources; until both say it is done the pod's sidecars are not
// consistent, so it counts against maxUnavailable like a restarting container.

// Reasons of the pod states of a resize.
const (
	// ReasonResizeUnsupported: the change needs a resize and the cluster cannot resize pods.
	ReasonResizeUnsupported = "ResizeUnsupported"
	// ReasonResizeRefused: kube-apiserver would refuse the resize (QoS class, removed limits...).
	ReasonResizeRefused = "ResizeRefused"
	// ReasonResizing: the kubelet is applying a resize (PodResizeInProgress).
	ReasonResizing = "Resizing"
	// ReasonResizeDeferred: the node cannot fit the resize now and retries (PodResizePending Deferred).
	ReasonResizeDeferred = "ResizeDeferred"
	// ReasonResizeInfeasible: the node can never fit the resize (PodResizePending Infeasible).
	ReasonResizeInfeasible = "ResizeInfeasible"
	// ReasonResizeError: the kubelet failed to apply a resize (PodResizeInProgress reason Error).
	ReasonResizeError = "ResizeError"
)

// Options are what a plan knows beyond the SidecarSet and its pods.
type Options struct {
	// ResizeUnsupported says why the cluster cannot resize pods in place; "" when it can.
	ResizeUnsupported string
	// ResizableRevisions are the SidecarSet's revisions whose sidecars differ from the current
	// spec in images and resources only (hash.WithoutImagesAndResources): pods injected from them
	// are upgraded in place, resources included.
	ResizableRevisions map[string]bool
	// ResizeRefused are the pods (by UID) whose resize to the current spec kube-apiserver refused
	// lately, with its message: they fail, holding no place of maxUnavailable (they run on
	// unchanged), until the controller tries them again after a backoff.
	ResizeRefused map[types.UID]string
	// InFlightEvictions counts the controller's evictions whose owners have not replaced the pod
	// yet (InFlight): each holds a place of maxUnavailable.
	InFlightEvictions int
	// Unseen are the pods (namespace/name) the controller wrote and whose writes the pods given
	// do not show yet: each holds a place of maxUnavailable (the write may have taken it down),
	// and nothing is planned for it until its write is seen (ReasonWritePending).
	Unseen map[string]bool
	// Deferred are the pods (by UID) whose last upgrade or eviction kube-apiserver refused, within
	// their backoff: they are neither upgraded nor recreated, and hold no place of maxUnavailable
	// (ReasonRetryBackoff), so that pods the cluster refuses (an admission policy, a budget, a
	// quota) never take the budget or a round's batch from the others.
	Deferred map[types.UID]bool
	// Lapsed are the namespaces whose pods held every place of a cluster SidecarSet's
	// maxUnavailable for NamespaceHoldLapse while pods of other namespaces waited (Result.Holder,
	// measured by the controller): their pods count against their namespace's share alone, no
	// longer against maxUnavailable (share.go).
	Lapsed map[string]bool
	// PreDownloading are the pods (by UID) whose upgrades wait for a pull of the new images onto
	// their nodes (package predownload): they are not upgraded and hold no place of
	// maxUnavailable (ReasonPreDownloading), and the walk goes on with the next pods in order.
	PreDownloading map[types.UID]bool
}

// Resize returns the kubelet's pending or in-progress resize of the pod (the PodResizePending
// condition when both are set), nil when none.
func (p *Pod) Resize() *corev1.PodCondition {
	if p.resize == nil {
		return nil
	}
	c := p.resize
	return &corev1.PodCondition{Type: corev1.PodConditionType(c.kind.String()), Status: corev1.ConditionTrue,
		Reason: c.reason.String(), Message: c.message.String(), LastTransitionTime: metav1.NewTime(c.since)}
}

// resizeState returns the reason of an outstanding resize of the pod's sidecars (names: a
// container whose status does not report its spec's cpu and memory yet), whether it failed, and
// the kubelet's message from its resize conditions; "" when none is outstanding. A resize of the
// pod's own containers alone is not the rollout's.
func resizeState(pod *Pod, names []string) (reason string, failed bool, message string) {
	outstanding := false
	for _, n := range names {
		if ct := pod.Container(n); ct != nil && !ct.Resized {
			outstanding = true
		}
	}
	c := pod.resize
	switch {
	case !outstanding:
		return "", false, ""
	case c == nil:
		return ReasonResizing, false, ""
	case c.kind.String() == string(corev1.PodResizePending) && c.reason.String() == corev1.PodReasonInfeasible:
		return ReasonResizeInfeasible, true, c.message.String()
	case c.kind.String() == string(corev1.PodResizePending):
		return ReasonResizeDeferred, false, c.message.String()
	case c.reason.String() == corev1.PodReasonError:
		return ReasonResizeError, true, c.message.String()
	}
	return ReasonResizing, false, c.message.String()
}

// resizable says whether the pod, whose sidecars come from revision, can be upgraded in place
// with a resize, and if not why (a reason and a message; both "" when the revision differs from
// the current spec in more than images and resources).
func (p *planner) resizable(pod *Pod, revision string) (ok bool, reason, message string) {
	if !p.opts.ResizableRevisions[revision] {
		return false, "", ""
	}
	if p.opts.ResizeUnsupported != "" {
		return false, ReasonResizeUnsupported, "a sidecar's resources changed and " + p.opts.ResizeUnsupported
	}
	if c := p.unresizable(pod); c != "" {
		return false, ReasonResizeUnsupported, fmt.Sprintf("a sidecar's resources changed and the pod's node cannot resize it in place (its kubelet reports no resources of running container %s)", c)
	}
	containers, initContainers := p.podContainers(pod)
	targets, err := sidecar.ResizeTargets(p.ss, sidecar.OwnContainers(containers, initContainers), sidecar.EvaluateResourceExpr)
	if err != nil {
		return false, ReasonResizeRefused, err.Error()
	}
	if why := sidecar.ResizeRefusal(containers, initContainers, targets); why != "" {
		return false, ReasonResizeRefused, fmt.Sprintf("the new resources cannot be applied in place: %s; the pod gets them when it is recreated", why)
	}
	return true, "", ""
}

// unresizable returns a running container of the pod whose status reports no resources, "" when
// none: kube-apiserver refuses to resize a pod on a node whose kubelet does not report them.
func (p *planner) unresizable(pod *Pod) string {
	for i := range pod.Containers {
		if c := &pod.Containers[i]; c.NoStatusResources && (!c.Init || c.NativeSidecar) {
			return c.Name()
		}
	}
	return ""
}

// podContainers rebuilds the pod's containers as far as a resize needs them: names, resources,
// whether injected, and the restart policy of native sidecars.
func (p *planner) podContainers(pod *Pod) (containers, initContainers []corev1.Container) {
	always := corev1.ContainerRestartPolicyAlways
	for i := range pod.Containers {
		ct := &pod.Containers[i]
		c := corev1.Container{Name: ct.Name(), Resources: p.resources(ct.resources)}
		if ct.Injected {
			c.Env = []corev1.EnvVar{{Name: sidecar.InjectedEnv, Value: "true"}}
		}
		if !ct.Init {
			containers = append(containers, c)
			continue
		}
		if ct.NativeSidecar {
			c.RestartPolicy = &always
		}
		initContainers = append(initContainers, c)
	}
	return containers, initContainers
}

// resources decodes a resources text, once per plan.
func (p *planner) resources(t text) corev1.ResourceRequirements {
	if r, ok := p.decoded[t]; ok {
		return r
	}
	var r corev1.ResourceRequirements
	if s := t.String(); s != "" {
		_ = json.Unmarshal([]byte(s), &r) // written by resourcesText
	}
	if p.decoded == nil {
		p.decoded = map[text]corev1.ResourceRequirements{}
	}
	p.decoded[t] = r
	return r
}

// resourcesText is the canonical JSON of a container's resources ("" for none), stored as a text:
// most pods of a workload ask the same.
func resourcesText(r *corev1.ResourceRequirements) string {
	if len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0 {
		return ""
	}
	b, err := json.Marshal(r)
	if err != nil {
		return ""
	}
	return string(b)
}

// isResizeCondition tells the kubelet's resize conditions.
func isResizeCondition(c *corev1.PodCondition) bool {
	return c.Type == corev1.PodResizePending || c.Type == corev1.PodResizeInProgress
}

// resizeMessage says what the kubelet reports of an outstanding resize.
func resizeMessage(f *podFacts) string {
	what := map[string]string{
		ReasonResizing:         "the kubelet is resizing sidecar containers",
		ReasonResizeDeferred:   "the node cannot fit the new resources now; the kubelet retries",
		ReasonResizeInfeasible: "the node can never fit the new resources; roll back or change them",
		ReasonResizeError:      "the kubelet failed to resize sidecar containers",
	}[f.resizing]
	if f.resizeMsg == "" {
		return what
	}
	return what + ": " + f.resizeMsg
}
