package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/injection"
)

// RepairAnnotation, set to "true" on a SidecarSet, has the controller evict the pods that missed
// its injection and that a controller owns, through the Eviction API and within the SidecarSet's
// maxUnavailable, so that their owners recreate them injected. Bare pods are never evicted.
const RepairAnnotation = "apps.kruise.io/repair-not-injected"

// Reasons a selected pod runs without the SidecarSet's sidecars (injection.Missed decides them,
// for kubectl sidecarset explain too).
const (
	ReasonCreatedBefore     = injection.MissedCreatedBefore
	ReasonCreatedWith       = injection.MissedCreatedWith
	ReasonNamespaceExcluded = injection.MissedNamespaceExcluded
	ReasonAdmittedWithout   = injection.MissedAdmittedWithout
	ReasonShadowed          = injection.MissedShadowed
)

// Missed is a pod the SidecarSet selects that runs without its sidecars, and why.
type Missed struct {
	Pod     *Pod
	Reason  string
	Message string
}

// ExplainMissed says why each pod of plan.NotInjected missed ss's injection; excluded tells the
// namespaces excluded from injection, cluster looks up the cluster SidecarSets injected into a pod
// (to find a NamespacedSidecarSet shadowed by one; nil: none is). The result is in the order of plan.NotInjected.
func ExplainMissed(ss *v1alpha1.SidecarSet, notInjected []*Pod, excluded func(namespace string) bool, cluster func(name string) *v1alpha1.SidecarSet) []Missed {
	out := make([]Missed, 0, len(notInjected))
	for _, p := range notInjected {
		in := injection.MissedInput{SidecarSet: ss, Namespace: p.Namespace, Created: p.Created,
			Excluded: excluded != nil && excluded(p.Namespace), Injected: p.injectedSidecarSets(), Cluster: cluster}
		m := Missed{Pod: p}
		m.Reason, m.Message = injection.Missed(in)
		out = append(out, m)
	}
	return out
}

// injectedSidecarSets are the names of the SidecarSets of the pod's hash annotation.
func (p *Pod) injectedSidecarSets() []string {
	names := make([]string, 0, len(p.Hashes))
	for _, h := range p.Hashes {
		names = append(names, h.sidecarSet.String())
	}
	return names
}

// countMissed returns the number of missed pods by reason.
func countMissed(missed []Missed) map[string]int32 {
	counts := map[string]int32{}
	for _, m := range missed {
		counts[m.Reason]++
	}
	return counts
}

// DescribeMissed summarizes missed pods for a condition message, e.g. "3 pods the SidecarSet
// selects run without its sidecars: 2 CreatedBeforeSidecarSet, 1 NamespaceExcluded".
func DescribeMissed(missed []Missed) string {
	counts := countMissed(missed)
	reasons := make([]string, 0, len(counts))
	for r := range counts {
		reasons = append(reasons, r)
	}
	slices.Sort(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	noun := "pods"
	if len(missed) == 1 {
		noun = "pod"
	}
	return fmt.Sprintf("%d %s the SidecarSet selects run without its sidecars: %s", len(missed), noun, strings.Join(parts, ", "))
}

// RepairInput is what choosing this round's repair evictions reads.
type RepairInput struct {
	SidecarSet *v1alpha1.SidecarSet
	Plan       *Result
	Missed     []Missed
	// InjectionReady says that pods created now get the SidecarSet's current sidecars.
	InjectionReady bool
	// InFlight are the earlier evictions whose owners have not replaced the pod yet (InFlight).
	InFlight []Eviction
}

// Repairs chooses the pods to evict this round so that their owners recreate them injected, when
// the SidecarSet asks for it (RepairAnnotation): missed pods that a controller owns, outside the
// excluded namespaces (they would come back without sidecars), in namespace/name order, as many as
// the unavailability budget leaves; not those a cluster SidecarSet shadows (they would come back
// the same). The budget is maxUnavailable resolved against every selected
// pod, less the updated pods not available (recreated pods coming up), the pods terminating, the
// evictions still in flight and this round's upgrades and recreations. Nothing is evicted while injection is not
// ready.
func Repairs(in RepairInput) []*Pod {
	if in.SidecarSet.Annotations[RepairAnnotation] != "true" || !in.InjectionReady || in.SidecarSet.Spec.UpdateStrategy.Paused {
		return nil
	}
	total := in.Plan.Counts.Matched + int32(len(in.Missed))
	room := ResolveMaxUnavailable(in.SidecarSet.Spec.UpdateStrategy.MaxUnavailable, total) -
		in.Plan.Unavailable - in.Plan.Terminating - int32(len(in.InFlight)) - int32(len(in.Plan.Upgrade)) - int32(len(in.Plan.Recreate))
	var out []*Pod
	for _, m := range sortedMissed(in.Missed) {
		if room <= 0 {
			break
		}
		if m.Reason == ReasonNamespaceExcluded || m.Reason == ReasonShadowed || m.Pod.Owner() == "" {
			continue
		}
		out = append(out, m.Pod)
		room--
	}
	return out
}

func sortedMissed(missed []Missed) []Missed {
	out := slices.Clone(missed)
	slices.SortFunc(out, func(a, b Missed) int {
		if c := strings.Compare(a.Pod.Namespace, b.Pod.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Pod.Name, b.Pod.Name)
	})
	return out
}

// Eviction is a repair eviction whose pod its owner has not replaced yet.
type Eviction struct {
	Namespace, Name string // the evicted pod
	Owner           types.UID
	// Want is how many active pods the owner had among the selected ones when the pod was evicted.
	Want int
	At   time.Time
}

// NewEviction records the eviction of pod, one of pods (the selected pods), at now.
func NewEviction(pod *Pod, pods []*Pod, now time.Time) Eviction {
	want, _ := ownerPods(pod.Owner(), pods)
	return Eviction{Namespace: pod.Namespace, Name: pod.Name, Owner: pod.Owner(), Want: want, At: now}
}

// EvictionTTL bounds how long an eviction holds a unit of the budget while its owner has not
// replaced the pod (the ttl of InFlight that the controller and the rollout view pass).
const EvictionTTL = 10 * time.Minute

// InFlight returns the evictions not settled yet: an eviction settles once its owner has at least
// Want active pods among pods again, every one of them ready, or once ttl has passed since it (an
// owner scaled down or deleted replaces nothing). Until then it holds a unit of the budget: the
// evicted pod may be gone before its replacement exists.
func InFlight(evictions []Eviction, pods []*Pod, now time.Time, ttl time.Duration) []Eviction {
	var out []Eviction
	for _, e := range evictions {
		active, ready := ownerPods(e.Owner, pods)
		if now.Sub(e.At) < ttl && (active < e.Want || ready < active) {
			out = append(out, e)
		}
	}
	return out
}

// ownerPods counts the active pods of owner among pods, and how many of them are ready.
func ownerPods(owner types.UID, pods []*Pod) (active, ready int) {
	for _, p := range pods {
		if p.Owner() != owner || !apps.PodActive(p.Phase, p.Deleting) {
			continue
		}
		active++
		if p.Ready {
			ready++
		}
	}
	return active, ready
}
