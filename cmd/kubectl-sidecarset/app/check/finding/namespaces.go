package finding

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The namespace-deletion check: Namespaces whose deletion waits on this server's APIServices. The
// namespace controller of kube-controller-manager discovers every group version before it empties a
// namespace; while an aggregated APIService is unavailable that discovery fails, and every
// Namespace being deleted in the cluster stays Terminating with the condition
// NamespaceDeletionDiscoveryFailure naming the group versions, until the APIService is Available
// again. A pure function of Facts, as those of finding.go.

// namespaceBlockingConditions are the Namespace conditions by which the namespace controller says
// what holds a deletion up; one of them True and naming a group of this server's APIServices ties
// the Namespace to this server.
var namespaceBlockingConditions = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
}

// maxNamedNamespaces is how many stuck Namespaces the finding names; it counts the rest.
const maxNamedNamespaces = 20

// namespaceDeletionHintDown is the fix while an APIService of the server is not Available.
const namespaceDeletionHintDown = "start the server (its pods ready, the APIServices Available: see the apiservices finding); " +
	"the namespace controller then finishes the deletions within seconds. If the server was removed for good, " +
	"uninstall it with its APIServices (kubectl delete apiservice v1alpha1.apps.kruise.io v1beta1.apps.kruise.io v1.admission.kruise.io; docs/deploy.md#uninstall)"

// namespaceDeletionHintUp is what to do when the APIServices are Available again but a Namespace
// still carries a condition naming the server's groups.
const namespaceDeletionHintUp = "the namespace controller retries with a backoff and should finish soon; if the Namespace stays, " +
	"kubectl get namespace NAME -o yaml: a NamespaceContentRemaining naming apps.kruise.io means objects of the server in it wait on their finalizers"

// serverGroups are the API groups of this server's APIServices (named VERSION.GROUP).
func serverGroups() []string {
	var groups []string
	for _, name := range apiservice.Names {
		_, group, _ := strings.Cut(name, ".")
		if !slices.Contains(groups, group) {
			groups = append(groups, group)
		}
	}
	return groups
}

// blockingCondition is the first condition of a Terminating Namespace that holds its deletion up on
// one of this server's groups, nil when none does.
func blockingCondition(ns *corev1.Namespace) *corev1.NamespaceCondition {
	if ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	groups := serverGroups()
	for _, typ := range namespaceBlockingConditions {
		for i := range ns.Status.Conditions {
			c := &ns.Status.Conditions[i]
			if c.Type != typ || c.Status != corev1.ConditionTrue {
				continue
			}
			for _, g := range groups {
				if strings.Contains(c.Message, g) {
					return c
				}
			}
		}
	}
	return nil
}

// unavailableAPIServices are this server's APIServices that route to a Service and are not
// Available (the apiservices finding says why).
func (f *Facts) unavailableAPIServices() []string {
	var out []string
	for _, name := range apiservice.Names {
		as := f.APIServices[name]
		if as != nil && as.Spec.Service != nil && availability(as) != "" {
			out = append(out, name)
		}
	}
	return out
}

// checkNamespaceDeletion: no Namespace is Terminating because of this server's APIServices. One
// held up while an APIService is not Available is an error naming each Namespace, how long it has
// been Terminating and the condition; one whose condition still names the server's groups once
// they are Available again is a warning (the controller retries with a backoff).
func checkNamespaceDeletion(f *Facts) Result {
	var stuck []string
	for i := range f.TerminatingNamespaces {
		ns := &f.TerminatingNamespaces[i]
		c := blockingCondition(ns)
		if c == nil {
			continue
		}
		since := "unknown"
		if ns.DeletionTimestamp != nil {
			since = duration.HumanDuration(f.Now.Sub(ns.DeletionTimestamp.Time))
		}
		stuck = append(stuck, fmt.Sprintf("%s (Terminating for %s: %s)", ns.Name, since, c.Type))
	}
	if len(stuck) == 0 {
		return result(v1alpha1.FindingNamespaceDeletion, StatusOK, fmt.Sprintf("no namespace is Terminating because of this server's APIServices (%d Terminating)", len(f.TerminatingNamespaces)))
	}
	sort.Strings(stuck)
	named := strings.Join(stuck, ", ")
	if len(stuck) > maxNamedNamespaces {
		named = strings.Join(stuck[:maxNamedNamespaces], ", ") + fmt.Sprintf(" and %d more", len(stuck)-maxNamedNamespaces)
	}
	if down := f.unavailableAPIServices(); len(down) > 0 {
		verb := "are"
		if len(down) == 1 {
			verb = "is"
		}
		r := result(v1alpha1.FindingNamespaceDeletion, StatusError, fmt.Sprintf("%s stuck Terminating: %s. kube-controller-manager cannot discover the server's group versions "+
			"while %s %s not Available (see apiservices): every namespace deletion in the cluster waits until the server is back",
			namespaces(len(stuck)), named, strings.Join(down, ", "), verb))
		r.Hint = namespaceDeletionHintDown
		return r
	}
	r := result(v1alpha1.FindingNamespaceDeletion, StatusWarning, fmt.Sprintf("%s Terminating with a condition naming the server's groups (%s), whose APIServices are Available again: %s",
		namespaces(len(stuck)), strings.Join(serverGroups(), ", "), named))
	r.Hint = namespaceDeletionHintUp
	return r
}

// namespaces counts n namespaces in words.
func namespaces(n int) string {
	if n == 1 {
		return "1 namespace"
	}
	return fmt.Sprintf("%d namespaces", n)
}
