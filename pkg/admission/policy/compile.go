package policy

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/sidecarset/apiserver/pkg/admission/policy/celpatch"
	"github.com/sidecarset/apiserver/pkg/admission/policy/neighbour"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// Input is what Compile needs.
type Input struct {
	// SidecarSet is the SidecarSet to compile, defaulted, with the hash annotations the server stamps.
	SidecarSet *v1alpha1.SidecarSet
	// Others are the other stored SidecarSets; those that may select the same pods decide where this
	// SidecarSet's containers go among theirs. Order does not matter.
	Others []*v1alpha1.SidecarSet
	// Neighbours, when not nil, are the SidecarSets among Others that may select the same pods
	// (see neighbour.Neighbours), computed once by a caller compiling many SidecarSets.
	Neighbours []*v1alpha1.SidecarSet
	// Bases, when not nil, are the names of the SidecarSets a canary among Others names as its
	// base, computed once by a caller compiling many SidecarSets (Others is then not read).
	Bases map[string]bool
	// ExcludedNamespaces are never injected (the namespaces the webhook configuration excludes).
	ExcludedNamespaces []string
	// Stamp is the updateTimestamp the policy writes into the pod's hash annotation entries: a
	// policy cannot read the clock, so the compiler stamps the time it compiled the spec.
	Stamp time.Time
	// SortSidecarContainersByName is the injector option of the same name; policies keep the
	// default order, so it sends every SidecarSet to the webhook.
	SortSidecarContainersByName bool
	// Granted: the SidecarSet asks for the policy path (apps.InjectionPathAnnotation) and is
	// among those the server serves first (see PlanInput.MaxPolicyRequests): the number of
	// SidecarSets that may share its pods does not send it to the webhook; the size of its CEL
	// still does.
	Granted bool
}

// Result says which path serves a SidecarSet.
type Result struct {
	// Path serves the SidecarSet.
	Path apps.InjectionPath
	// Reason says why (apps.ReasonCompiled for the policy path).
	Reason string
	// Message explains Reason to a person.
	Message string
	// PolicyName, for apps.PathPolicy, is the policy (and binding) that injects the SidecarSet.
	PolicyName string
}

// Injection is r as the /rollout view and the Injected condition report it.
func (r Result) Injection() *v1alpha1.RolloutInjection {
	return &v1alpha1.RolloutInjection{Path: string(r.Path), Reason: r.Reason, Message: r.Message, Policy: r.PolicyName}
}

// compileMember classifies a SidecarSet and renders its part of a group policy when a policy
// serves it.
func compileMember(in Input) (Result, *celpatch.Member, error) {
	ss := in.SidecarSet
	if in.Neighbours == nil {
		in.Neighbours = neighbour.Neighbours(ss, in.Others)
	}
	scope := neighbour.ScopeOf(ss, in.Neighbours)
	in.Neighbours = scope.Shared
	if r, ok := classify(&in); !ok {
		return r, nil, nil
	}
	m, err := celpatch.NewMember(ss, in.Stamp, scope)
	if err != nil {
		return Result{}, nil, fmt.Errorf("compiling SidecarSet %q: %w", ss.Name, err)
	}
	if n, tooLarge := m.TooLarge(); tooLarge {
		return Result{Path: apps.PathWebhook, Reason: apps.ReasonTooLarge,
			Message: fmt.Sprintf("its sidecars and selector need about %d characters of CEL, more than kube-apiserver compiles quickly for one SidecarSet (%d)", n, celpatch.MaxMemberSize)}, nil, nil
	}
	return Result{Path: apps.PathPolicy, Reason: apps.ReasonCompiled}, m, nil
}

// classify returns the result for a SidecarSet a policy does not serve, and false; or true when
// it compiles.
func classify(in *Input) (Result, bool) {
	ss := in.SidecarSet
	webhook := func(reason, format string, args ...any) (Result, bool) {
		return Result{Path: apps.PathWebhook, Reason: reason, Message: fmt.Sprintf(format, args...)}, false
	}
	switch {
	case ss.Spec.InjectionStrategy.Paused:
		return Result{Path: apps.PathNone, Reason: apps.ReasonInjectionPaused, Message: "injectionStrategy.paused is set"}, false
	case apps.SelectsNoPod(ss.Spec.Selector):
		return Result{Path: apps.PathNone, Reason: apps.ReasonNoSelector, Message: "spec.selector selects no pod"}, false
	case in.SortSidecarContainersByName:
		return webhook(apps.ReasonSortedContainers, "the server sorts sidecar containers by name")
	case isCanaryOrBase(ss, in.Others) || in.Bases[ss.Name]:
		return webhook(apps.ReasonCanary, "canary SidecarSets and their bases choose between each other per pod")
	case ss.Spec.InjectionStrategy.Revision != nil:
		return webhook(apps.ReasonInjectionRevision, "spec.injectionStrategy.revision chooses a recorded revision per pod")
	case len(ss.Spec.PatchPodMetadata) > 0:
		return webhook(apps.ReasonPatchPodMetadata, "spec.patchPodMetadata merges into pod annotations")
	}
	if reason, field := containerFeature(ss); reason != "" {
		return webhook(reason, "%s is computed from the pod at admission", field)
	}
	if o, what := collidesWithCluster(ss, in.Neighbours); o != "" {
		return webhook(apps.ReasonShadowed, "%s is also in cluster SidecarSet %s, which wins in the pods both select: the webhook leaves this NamespacedSidecarSet out of them", what, o)
	}
	if len(in.Neighbours) > neighbour.MaxNeighbours && !in.Granted {
		// Not the count: it changes with every write of a SidecarSet sharing a common label, and
		// each change is a status write of every SidecarSet that shares it.
		return webhook(apps.ReasonManyNeighbours, "it may select the same pods as more than %d other SidecarSets, the most a policy places sidecars among", neighbour.MaxNeighbours)
	}
	if name := neighbour.AmbiguousName(ss, in.Neighbours); name != "" {
		return webhook(apps.ReasonAmbiguousContainers, "container name %q is used by SidecarSets that sort both before and after this one", name)
	}
	return Result{}, true
}

// collidesWithCluster returns, for a NamespacedSidecarSet, the first cluster SidecarSet among
// its neighbours that may collide with it in a pod both select, and on what: a container or init
// container name, or a volume name defined otherwise (the conflict rules a cluster SidecarSet's
// write does not check against NamespacedSidecarSets). The injector leaves such a
// NamespacedSidecarSet out of the pods the cluster SidecarSet is injected into, which a policy
// cannot do whichever runs first; so the webhook serves it.
func collidesWithCluster(ss *v1alpha1.SidecarSet, near []*v1alpha1.SidecarSet) (string, string) {
	if neighbour.TenantNamespace(ss) == "" {
		return "", ""
	}
	names := map[string]bool{}
	for _, n := range podContainerNames(ss) {
		names[n] = true
	}
	for _, o := range near {
		if neighbour.TenantNamespace(o) != "" {
			continue
		}
		for _, n := range podContainerNames(o) {
			if names[n] {
				return o.Name, fmt.Sprintf("container name %q", n)
			}
		}
		for i := range ss.Spec.Volumes {
			for j := range o.Spec.Volumes {
				if v, ov := &ss.Spec.Volumes[i], &o.Spec.Volumes[j]; v.Name == ov.Name && !apiequality.Semantic.DeepEqual(v, ov) {
					return o.Name, fmt.Sprintf("volume %q", v.Name)
				}
			}
		}
	}
	return "", ""
}

// podContainerNames are the pod container names of ss's sidecars, init and regular (they share
// the pod's names), hot-upgrade twins included.
func podContainerNames(ss *v1alpha1.SidecarSet) []string {
	var out []string
	for i := range ss.Spec.Containers {
		out = append(out, sidecar.PodContainerNames(&ss.Spec.Containers[i], false)...)
	}
	for i := range ss.Spec.InitContainers {
		out = append(out, sidecar.PodContainerNames(&ss.Spec.InitContainers[i], true)...)
	}
	return out
}

// containerFeature returns the first container feature a policy does not express, and its field.
func containerFeature(ss *v1alpha1.SidecarSet) (string, string) {
	for _, list := range []struct {
		field string
		items []v1alpha1.SidecarContainer
	}{{"spec.initContainers", ss.Spec.InitContainers}, {"spec.containers", ss.Spec.Containers}} {
		for i := range list.items {
			sc := &list.items[i]
			path := fmt.Sprintf("%s[%d]", list.field, i)
			switch {
			case sidecar.IsHotUpgrade(sc):
				return apps.ReasonHotUpgrade, path + ".upgradeStrategy"
			case sc.ResourcesPolicy != nil:
				return apps.ReasonResourcesPolicy, path + ".resourcesPolicy"
			case len(sc.TransferEnv) > 0:
				return apps.ReasonTransferEnv, path + ".transferEnv"
			case sc.ShareVolumePolicy.Type == v1alpha1.ShareVolumePolicyEnabled:
				return apps.ReasonShareVolumePolicy, path + ".shareVolumePolicy"
			case sc.ShareVolumeDevicePolicy != nil && sc.ShareVolumeDevicePolicy.Type == v1alpha1.ShareVolumePolicyEnabled:
				return apps.ReasonShareVolumeDevices, path + ".shareVolumeDevicePolicy"
			}
		}
	}
	return "", ""
}

// isCanaryOrBase reports whether ss is a canary, or the base of a canary among others.
func isCanaryOrBase(ss *v1alpha1.SidecarSet, others []*v1alpha1.SidecarSet) bool {
	if _, ok := apps.CanaryBase(ss.Annotations); ok {
		return true
	}
	for _, o := range others {
		if o == nil {
			continue
		}
		if base, ok := apps.CanaryBase(o.Annotations); ok && base == ss.Name {
			return true
		}
	}
	return false
}

// Defers reports whether the policy of ss leaves pod to the webhook: the pod declares, as its
// own (no IS_INJECTED=true), a container or init container named like a sidecar of ss or of a
// SidecarSet among others that may inject into the same pods (a NamespacedSidecarSet's only for
// pods of its namespace), or the policy of ss leaves the pod's namespace to the webhook (see
// neighbour.ScopeOf). The webhook replaces such a
// container in place; the policy's no-declared-sidecar match condition is this predicate in CEL.
func Defers(ss *v1alpha1.SidecarSet, others []*v1alpha1.SidecarSet, pod *corev1.Pod) bool {
	scope := neighbour.ScopeOf(ss, neighbour.Neighbours(ss, others))
	if slices.Contains(scope.Handoff, pod.Namespace) {
		return true
	}
	sets := append(append([]*v1alpha1.SidecarSet{ss}, scope.Shared...), scope.Tenants[pod.Namespace]...)
	declares := func(own []corev1.Container, sidecars func(*v1alpha1.SidecarSet) []v1alpha1.SidecarContainer) bool {
		for i := range own {
			if sidecar.IsInjected(&own[i]) {
				continue
			}
			for _, s := range sets {
				for _, sc := range sidecars(s) {
					if sc.Name == own[i].Name {
						return true
					}
				}
			}
		}
		return false
	}
	return declares(pod.Spec.Containers, func(s *v1alpha1.SidecarSet) []v1alpha1.SidecarContainer { return s.Spec.Containers }) ||
		declares(pod.Spec.InitContainers, func(s *v1alpha1.SidecarSet) []v1alpha1.SidecarContainer { return s.Spec.InitContainers })
}
