package finding

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// discoveryFailure is the message kube-controller-manager's namespace controller writes while the
// server's APIServices are unavailable.
const discoveryFailure = "Discovery failed for some groups, 3 failing: unable to retrieve the complete list of server APIs: " +
	"admission.kruise.io/v1: stale GroupVersion discovery: admission.kruise.io/v1, apps.kruise.io/v1alpha1: stale GroupVersion discovery: apps.kruise.io/v1alpha1, " +
	"apps.kruise.io/v1beta1: stale GroupVersion discovery: apps.kruise.io/v1beta1"

// terminating is a Namespace deleted ago before checkNow, with the conditions given as type,
// status and message.
func terminating(name string, ago time.Duration, conditions ...corev1.NamespaceCondition) corev1.Namespace {
	deleted := metav1.NewTime(checkNow.Add(-ago))
	return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &deleted},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: conditions}}
}

func nsCondition(typ corev1.NamespaceConditionType, status corev1.ConditionStatus, message string) corev1.NamespaceCondition {
	return corev1.NamespaceCondition{Type: typ, Status: status, Message: message}
}

// serverDown makes the named APIServices (v1.admission.kruise.io when none is named) unavailable,
// as kube-apiserver reports a server that does not answer.
func serverDown(f *Facts, names ...string) {
	if len(names) == 0 {
		names = []string{"v1.admission.kruise.io"}
	}
	for _, name := range names {
		f.APIServices[name].Status.Conditions[0] = apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available,
			Status: apiregistrationv1.ConditionFalse, Reason: "FailedDiscoveryCheck", Message: "connection refused"}
	}
}

// TestCheckNamespaceDeletion: Namespaces Terminating on a condition naming the server's groups
// are an error while an APIService is not Available (each named, with how long and the
// condition), a warning once they are all Available; other Terminating Namespaces are not the
// server's doing.
func TestCheckNamespaceDeletion(t *testing.T) {
	discovery := nsCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, discoveryFailure)
	admission := []string{"v1.admission.kruise.io"}
	for _, tc := range []struct {
		name string
		down []string // the APIServices not Available
		nss  []corev1.Namespace
		want Result
	}{
		{"nothing Terminating", admission, nil,
			Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusOK, Message: "no namespace is Terminating because of this server's APIServices (0 Terminating)"}},
		{"stuck on discovery while the server is down", admission, []corev1.Namespace{
			terminating("shop", 72*time.Second, discovery),
			terminating("ci-1234", 10*time.Minute, nsCondition(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionFalse, "All legacy kube types successfully parsed"), discovery),
		}, Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusError, Hint: namespaceDeletionHintDown,
			Message: "2 namespaces stuck Terminating: ci-1234 (Terminating for 10m: NamespaceDeletionDiscoveryFailure), shop (Terminating for 72s: NamespaceDeletionDiscoveryFailure). " +
				"kube-controller-manager cannot discover the server's group versions while v1.admission.kruise.io is not Available (see apiservices): " +
				"every namespace deletion in the cluster waits until the server is back"}},
		{"every APIService down", apiservice.Names, []corev1.Namespace{terminating("shop", 72*time.Second, discovery)},
			Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusError, Hint: namespaceDeletionHintDown,
				Message: "1 namespace stuck Terminating: shop (Terminating for 72s: NamespaceDeletionDiscoveryFailure). " +
					"kube-controller-manager cannot discover the server's group versions while v1alpha1.apps.kruise.io, v1beta1.apps.kruise.io, v1.admission.kruise.io are not Available (see apiservices): " +
					"every namespace deletion in the cluster waits until the server is back"}},
		{"content of the server's groups remaining", admission, []corev1.Namespace{
			terminating("shop", time.Minute, nsCondition(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "Some resources are remaining: namespacedsidecarsets.apps.kruise.io has 1 resource instances")),
		}, Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusError, Hint: namespaceDeletionHintDown,
			Message: "1 namespace stuck Terminating: shop (Terminating for 60s: NamespaceContentRemaining). " +
				"kube-controller-manager cannot discover the server's group versions while v1.admission.kruise.io is not Available (see apiservices): " +
				"every namespace deletion in the cluster waits until the server is back"}},
		{"the group version parsing failing on admission.kruise.io", admission, []corev1.Namespace{
			terminating("shop", time.Minute, nsCondition(corev1.NamespaceDeletionGVParsingFailure, corev1.ConditionTrue, "admission.kruise.io/v1: unexpected GroupVersion")),
		}, Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusError, Hint: namespaceDeletionHintDown,
			Message: "1 namespace stuck Terminating: shop (Terminating for 60s: NamespaceDeletionGroupVersionParsingFailure). " +
				"kube-controller-manager cannot discover the server's group versions while v1.admission.kruise.io is not Available (see apiservices): " +
				"every namespace deletion in the cluster waits until the server is back"}},
		{"another aggregated API, a finalizer, a condition turned False", admission, []corev1.Namespace{
			terminating("metrics", time.Minute, nsCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue,
				"Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1")),
			terminating("pvc", time.Minute, nsCondition(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "Some content in the namespace has finalizers remaining: kubernetes.io/pvc-protection in 1 resource instances")),
			terminating("over", time.Minute, nsCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "All resources successfully discovered")),
		}, Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusOK, Message: "no namespace is Terminating because of this server's APIServices (3 Terminating)"}},
		{"the server back, the controller not yet retried", nil, []corev1.Namespace{terminating("shop", 80*time.Second, discovery)},
			Result{Name: v1alpha1.FindingNamespaceDeletion, Status: StatusWarning, Hint: namespaceDeletionHintUp,
				Message: "1 namespace Terminating with a condition naming the server's groups (apps.kruise.io, admission.kruise.io), whose APIServices are Available again: " +
					"shop (Terminating for 80s: NamespaceDeletionDiscoveryFailure)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := installedFacts(t)
			if len(tc.down) > 0 {
				serverDown(f, tc.down...)
			}
			f.TerminatingNamespaces = tc.nss
			if diff := cmp.Diff(tc.want, checkNamespaceDeletion(f)); diff != "" {
				t.Errorf("namespace-deletion (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckNamespaceDeletionNamesAtMost: a finding names at most maxNamedNamespaces Namespaces
// and counts the others.
func TestCheckNamespaceDeletionNamesAtMost(t *testing.T) {
	f := installedFacts(t)
	serverDown(f)
	for i := range maxNamedNamespaces + 3 {
		f.TerminatingNamespaces = append(f.TerminatingNamespaces, terminating("ns-"+string(rune('a'+i)), time.Minute,
			nsCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, discoveryFailure)))
	}
	got := checkNamespaceDeletion(f)
	if got.Status != StatusError || !strings.Contains(got.Message, "23 namespaces stuck Terminating") || !strings.Contains(got.Message, " and 3 more.") ||
		strings.Contains(got.Message, "ns-u ") {
		t.Errorf("namespace-deletion with 23 stuck: %s %q", got.Status, got.Message)
	}
}

// TestNamespaceDeletionInTheReport: Assess reports namespace-deletion in the server's category
// with the fix as hint, and skipped when the Namespaces could not be listed.
func TestNamespaceDeletionInTheReport(t *testing.T) {
	stuck := terminating("shop", time.Minute, nsCondition(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, discoveryFailure))
	f := installedFacts(t)
	f.TerminatingNamespaces = []corev1.Namespace{stuck}
	serverDown(f)
	got := map[string]Result{}
	for _, c := range Assess(f).Checks {
		got[c.Name] = c
	}
	if c := got[v1alpha1.FindingNamespaceDeletion]; c.Status != StatusError || c.Category != categoryServer || c.Hint != namespaceDeletionHintDown ||
		c.Docs != docsURL+categoryServer || !strings.Contains(c.Message, "shop (Terminating for 60s") {
		t.Errorf("namespace-deletion in the report: %+v", c)
	}

	f = installedFacts(t)
	f.Unread = map[string]Unread{v1alpha1.FindingNamespaceDeletion: {What: "namespaces", Err: "forbidden", Forbidden: true}}
	for _, c := range Assess(f).Checks {
		if c.Name == v1alpha1.FindingNamespaceDeletion && (c.Status != StatusSkipped || !strings.Contains(c.Message, "not allowed to read namespaces")) {
			t.Errorf("namespace-deletion without the right to list namespaces: %s %q, want skipped", c.Status, c.Message)
		}
	}
}

// FuzzBlockingCondition: whatever a condition says, a Namespace is tied to this server only while
// Terminating, by a blocking condition that is True and names one of the server's groups.
func FuzzBlockingCondition(f *testing.F) {
	f.Add(string(corev1.NamespaceDeletionDiscoveryFailure), "True", discoveryFailure, true)
	f.Add(string(corev1.NamespaceContentRemaining), "True", "Some resources are remaining: pods. has 1 resource instances", true)
	f.Add(string(corev1.NamespaceFinalizersRemaining), "True", "apps.kruise.io", false)
	f.Fuzz(func(t *testing.T, typ, status, message string, isTerminating bool) {
		ns := terminating("ns", time.Minute, nsCondition(corev1.NamespaceConditionType(typ), corev1.ConditionStatus(status), message))
		if !isTerminating {
			ns.Status.Phase = corev1.NamespaceActive
		}
		c := blockingCondition(&ns)
		names := strings.Contains(message, "apps.kruise.io") || strings.Contains(message, "admission.kruise.io")
		blocking := slices.Contains(namespaceBlockingConditions, corev1.NamespaceConditionType(typ))
		if want := isTerminating && status == "True" && names && blocking; (c != nil) != want {
			t.Errorf("condition %s=%s %q, Terminating %v: tied to the server %v, want %v", typ, status, message, isTerminating, c != nil, want)
		}
	})
}
