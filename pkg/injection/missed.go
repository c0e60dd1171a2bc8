package injection

import (
	"fmt"
	"time"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Reasons an existing pod that a SidecarSet selects runs without its sidecars. The /rollout view
// (and the PodsNotInjected condition) and kubectl sidecarset explain both decide them with Missed,
// so they name the same reason for a pod.
const (
	// MissedCreatedBefore: the pod was created before the SidecarSet (injection happens only when
	// a pod is created): its creationTimestamp is an earlier second than the SidecarSet's.
	MissedCreatedBefore = "CreatedBeforeSidecarSet"
	// MissedCreatedWith: the pod was created in the same second as the SidecarSet. Creation times
	// are whole seconds, and pods (in the main cluster's etcd) and SidecarSets (in the server's)
	// have resourceVersions of different sequences, so nothing orders the two: the pod was most
	// likely created while the SidecarSet's create was in progress (a pod created once it
	// returned is injected).
	MissedCreatedWith = "CreatedWithSidecarSet"
	// MissedNamespaceExcluded: the pod's namespace is excluded from injection by the server's
	// admission configuration.
	MissedNamespaceExcluded = "NamespaceExcluded"
	// MissedAdmittedWithout: the pod was created after the SidecarSet but admitted without it
	// (injection unavailable, failing open, or skipped).
	MissedAdmittedWithout = "AdmittedWithoutSidecars"
	// MissedShadowed: a NamespacedSidecarSet's pod carries a cluster SidecarSet that collides
	// with it (Collision): the cluster SidecarSet wins at injection.
	MissedShadowed = apps.ReasonShadowed
)

// MissedInput is what decides why a pod missed a SidecarSet's injection.
type MissedInput struct {
	// SidecarSet selects the pod (its creationTimestamp is read).
	SidecarSet *v1alpha1.SidecarSet
	// Namespace and Created are the pod's namespace and creationTimestamp.
	Namespace string
	Created   time.Time
	// Excluded says the admission configuration keeps the namespace from injection.
	Excluded bool
	// Injected are the SidecarSets injected into the pod (their names, as its hash annotation
	// lists them), and Cluster finds a cluster SidecarSet by name (nil when it is gone): a
	// NamespacedSidecarSet may be shadowed by one of them (see Shadowing).
	Injected []string
	Cluster  func(name string) *v1alpha1.SidecarSet
}

// Missed returns why the pod of in runs without the SidecarSet's sidecars, and a message saying
// what to do.
func Missed(in MissedInput) (reason, message string) {
	created := in.SidecarSet.CreationTimestamp.Time
	switch {
	case in.Excluded:
		return MissedNamespaceExcluded, fmt.Sprintf("namespace %s is excluded from sidecar injection by the server's admission configuration", in.Namespace)
	case in.Created.Before(created):
		return MissedCreatedBefore, fmt.Sprintf("the pod was created at %s, before the SidecarSet (%s); sidecars are injected only when a pod is created: recreate it",
			stamp(in.Created), stamp(created))
	case in.Created.Equal(created):
		return MissedCreatedWith, fmt.Sprintf("the pod was created in the same second as the SidecarSet (%s), most likely while the SidecarSet's create was in progress "+
			"(creation times are whole seconds; pods created once the create returned are injected): recreate it", stamp(in.Created))
	}
	if by := Shadowing(in.SidecarSet, in.Injected, in.Cluster); by != "" {
		return MissedShadowed, fmt.Sprintf("cluster SidecarSet %s, injected into the pod, collides with this one (a container, volume or annotation); a cluster SidecarSet wins", by)
	}
	return MissedAdmittedWithout, fmt.Sprintf("the pod was created at %s, after the SidecarSet (%s), and admitted without its sidecars (injection was unavailable or skipped): recreate it",
		stamp(in.Created), stamp(created))
}

// Shadowing returns, for a NamespacedSidecarSet ss, the first of the SidecarSets injected into a
// pod (injected: their names, as its hash annotation lists them) that is a cluster SidecarSet
// colliding with ss (Collision: the injector left ss out of the pod); "" for a cluster
// SidecarSet or when none does. lookup finds a cluster SidecarSet by name (nil when it is gone).
func Shadowing(ss *v1alpha1.SidecarSet, injected []string, lookup func(name string) *v1alpha1.SidecarSet) string {
	if _, _, ok := apps.SplitNamespacedName(ss.Name); !ok || lookup == nil {
		return ""
	}
	for _, name := range injected {
		if _, _, namespaced := apps.SplitNamespacedName(name); namespaced {
			continue
		}
		if c := lookup(name); c != nil {
			if why, err := Collision(ss, c); err == nil && why != "" {
				return name
			}
		}
	}
	return ""
}

// stamp renders a creation time as its object shows it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
