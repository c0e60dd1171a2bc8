package finding

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The checks of the Kubernetes version, OpenKruise's leftovers, the server's health and etcd, and
// each SidecarSet's conditions: pure functions of Facts, as those of finding.go.

// minKubernetes is the oldest Kubernetes the server installs on (webhook injection): the
// ValidatingAdmissionPolicy guarding its writes is admissionregistration.k8s.io/v1 from 1.30.
// policyKubernetes is the first release serving admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy, which policy injection uses.
var (
	minKubernetes    = utilversion.MajorMinor(1, 30)
	policyKubernetes = utilversion.MajorMinor(1, 36)
)

// OpenKruise's objects, as its Helm chart installs them.
const (
	OpenKruiseMutatingWebhook   = "kruise-mutating-webhook-configuration"
	OpenKruiseValidatingWebhook = "kruise-validating-webhook-configuration"
	OpenKruiseNamespace         = "kruise-system"
	OpenKruiseManager           = "kruise-controller-manager"
)

// etcdQuotaWarning is the share of the etcd quota above which etcd-quota warns.
const etcdQuotaWarning = 0.8

// checkConnectivity: kube-apiserver answered (check could not run otherwise).
func checkConnectivity(f *Facts) Result {
	return result(v1alpha1.FindingConnectivity, StatusOK, "kube-apiserver answered discovery")
}

// checkKubernetesVersion: the cluster runs Kubernetes 1.30 or later.
func checkKubernetesVersion(f *Facts) Result {
	v, err := utilversion.ParseGeneric(f.KubernetesVersion)
	switch {
	case f.KubernetesVersion == "" || err != nil:
		return result(v1alpha1.FindingKubernetesVersion, StatusWarning, fmt.Sprintf("kube-apiserver's version %q cannot be read", f.KubernetesVersion))
	case v.LessThan(minKubernetes):
		return result(v1alpha1.FindingKubernetesVersion, StatusError, fmt.Sprintf("Kubernetes %s: the server needs %s or later (webhook injection), %s for policy injection", f.KubernetesVersion, minKubernetes, policyKubernetes))
	}
	mode := "webhook injection only (policy injection needs " + policyKubernetes.String() + ")"
	if !v.LessThan(policyKubernetes) {
		mode = "policy and webhook injection"
	}
	return result(v1alpha1.FindingKubernetesVersion, StatusOK, fmt.Sprintf("Kubernetes %s: %s", f.KubernetesVersion, mode))
}

// checkPolicyAPI: the cluster serves v1 MutatingAdmissionPolicies (the default --injection=policy
// uses them); a warning where it does not, as the webhook then injects every SidecarSet.
func checkPolicyAPI(f *Facts) Result {
	switch {
	case f.PolicyAPI == nil:
		return result(v1alpha1.FindingPolicyAPI, StatusSkipped, "discovery of admissionregistration.k8s.io/v1 was not read")
	case !*f.PolicyAPI:
		return result(v1alpha1.FindingPolicyAPI, StatusWarning, "the cluster serves no admissionregistration.k8s.io/v1 MutatingAdmissionPolicy: "+
			"with --injection=policy the webhook injects every SidecarSet (the /rollout view says PoliciesNotServed)")
	}
	return result(v1alpha1.FindingPolicyAPI, StatusOK, "admissionregistration.k8s.io/v1 MutatingAdmissionPolicy is served: --injection=policy injects the SidecarSets a policy can express inside kube-apiserver")
}

// checkOpenKruiseWebhooks: OpenKruise's webhook configurations. With OpenKruise's manager running,
// its webhook injects pods too (a warning, as coexistence is possible until the cutover); without
// it they are leftovers whose failurePolicy refuses the pods and workloads they select.
func checkOpenKruiseWebhooks(f *Facts) Result {
	if len(f.OpenKruiseWebhooks) == 0 {
		return result(v1alpha1.FindingOpenKruiseWebhooks, StatusOK, "no webhook configuration of OpenKruise ("+OpenKruiseMutatingWebhook+", "+OpenKruiseValidatingWebhook+")")
	}
	found := strings.Join(f.OpenKruiseWebhooks, ", ")
	if f.OpenKruiseManager == nil {
		return result(v1alpha1.FindingOpenKruiseWebhooks, StatusError, found+" left behind without OpenKruise's manager ("+OpenKruiseNamespace+"/"+OpenKruiseManager+
			"): kube-apiserver still calls them for the pods they select and fails those requests")
	}
	return result(v1alpha1.FindingOpenKruiseWebhooks, StatusWarning, found+": OpenKruise's webhooks are active: its SidecarSet webhook injects pods beside this server's")
}

// checkOpenKruiseManager: OpenKruise's manager Deployment.
func checkOpenKruiseManager(f *Facts) Result {
	d := f.OpenKruiseManager
	if d == nil {
		return result(v1alpha1.FindingOpenKruiseManager, StatusOK, "no OpenKruise manager ("+OpenKruiseNamespace+"/"+OpenKruiseManager+")")
	}
	return result(v1alpha1.FindingOpenKruiseManager, StatusWarning, fmt.Sprintf("OpenKruise runs (%s/%s, %d of %d replicas ready): once this server's APIServices take apps.kruise.io, "+
		"its controllers lose their SidecarSets and every other kind of the group", d.Namespace, d.Name, d.Status.ReadyReplicas, replicas(d.Spec.Replicas)))
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// checkAPIServiceConflicts: the APIServices of apps.kruise.io route to this server's Service, or
// to kube-apiserver itself (a CRD's, see openkruise-crds); one routed to another service belongs
// to another server.
func checkAPIServiceConflicts(f *Facts) Result {
	var conflicts []string
	for _, name := range apiservice.Names {
		as := f.APIServices[name]
		if as == nil || as.Spec.Service == nil {
			continue
		}
		if svc := as.Spec.Service.Namespace + "/" + as.Spec.Service.Name; svc != f.ServerService {
			conflicts = append(conflicts, name+" routes to service "+svc)
		}
	}
	if len(conflicts) > 0 {
		return result(v1alpha1.FindingAPIServiceConflicts, StatusError, strings.Join(conflicts, "; ")+", not to "+f.ServerService+" (--server-namespace, --server-service)")
	}
	return result(v1alpha1.FindingAPIServiceConflicts, StatusOK, "no APIService of apps.kruise.io routes elsewhere than "+f.ServerService)
}

// checkServerHealth: the server's own checks on /healthz, but etcd's (etcd-health).
func checkServerHealth(f *Facts) Result {
	if f.Health == nil {
		return result(v1alpha1.FindingServerHealth, StatusSkipped, "the server's /healthz was not read")
	}
	var failed []string
	for _, line := range f.Health.Failed {
		if !strings.Contains(line, "etcd") {
			failed = append(failed, line)
		}
	}
	if len(failed) > 0 {
		return result(v1alpha1.FindingServerHealth, StatusError, "failing: "+strings.Join(failed, "; "))
	}
	return result(v1alpha1.FindingServerHealth, StatusOK, fmt.Sprintf("%d health checks pass", len(f.Health.Checks)))
}

// checkEtcdHealth: the server's etcd check on /healthz.
func checkEtcdHealth(f *Facts) Result {
	if f.Health == nil {
		return result(v1alpha1.FindingEtcdHealth, StatusSkipped, "the server's /healthz was not read")
	}
	var names []string
	for name := range f.Health.Checks {
		if strings.HasPrefix(name, "etcd") {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return result(v1alpha1.FindingEtcdHealth, StatusWarning, "the server's /healthz has no etcd check")
	}
	var failed []string
	for _, n := range names {
		if !f.Health.Checks[n] {
			failed = append(failed, n)
		}
	}
	if len(failed) > 0 {
		return result(v1alpha1.FindingEtcdHealth, StatusError, "the server's etcd checks fail: "+strings.Join(failed, ", ")+" (it injects from its caches, but SidecarSets cannot be written)")
	}
	return result(v1alpha1.FindingEtcdHealth, StatusOK, "the server reaches its etcd ("+strings.Join(names, ", ")+" ok on /healthz)")
}

// checkEtcdQuota: the database size the server reports against the etcd quota.
func checkEtcdQuota(f *Facts) Result {
	if f.StorageBytes < 0 || f.EtcdQuota <= 0 {
		return result(v1alpha1.FindingEtcdQuota, StatusSkipped, "the server reports no etcd database size on /metrics")
	}
	used := float64(f.StorageBytes) / float64(f.EtcdQuota)
	msg := fmt.Sprintf("etcd's database is %s, %.0f%% of the %s quota (--etcd-quota-bytes)", bytesText(f.StorageBytes), 100*used, bytesText(f.EtcdQuota))
	switch {
	case used >= 1:
		return result(v1alpha1.FindingEtcdQuota, StatusError, msg+": etcd refuses writes (NOSPACE)")
	case used >= etcdQuotaWarning:
		return result(v1alpha1.FindingEtcdQuota, StatusWarning, msg)
	}
	return result(v1alpha1.FindingEtcdQuota, StatusOK, msg)
}

func bytesText(n int64) string {
	const mi = 1 << 20
	if n >= 1<<30 {
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + "GiB"
	}
	return strconv.FormatFloat(float64(n)/mi, 'f', 1, 64) + "MiB"
}

// checkConditions: each SidecarSet's and NamespacedSidecarSet's conditions other than Injected:
// a stalled rollout (Stalled True, or Progressing False for PodsFailed) is an error; pods running
// without its sidecars (PodsNotInjected) and a webhook receiving every pod
// (WebhookReceivesEveryPod) are warnings.
func checkConditions(f *Facts) Result {
	var errs, warnings []string
	for _, ss := range f.injectingSets() {
		stalled := meta.FindStatusCondition(ss.conditions, v1alpha1.SidecarSetStalled)
		progressing := meta.FindStatusCondition(ss.conditions, v1alpha1.SidecarSetProgressing)
		switch {
		case stalled != nil && stalled.Status == metav1.ConditionTrue:
			errs = append(errs, ss.name+": rollout Stalled: "+stalled.Message)
		case progressing != nil && progressing.Status == metav1.ConditionFalse && progressing.Reason == "PodsFailed":
			errs = append(errs, ss.name+": rollout stalled (Progressing PodsFailed): "+progressing.Message)
		}
		for _, typ := range []string{v1alpha1.SidecarSetPodsNotInjected, v1alpha1.SidecarSetWebhookReceivesEveryPod} {
			if c := meta.FindStatusCondition(ss.conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
				warnings = append(warnings, ss.name+": "+typ+": "+c.Message)
			}
		}
	}
	sort.Strings(errs)
	sort.Strings(warnings)
	switch {
	case len(errs) > 0:
		return result(v1alpha1.FindingSidecarSetConditions, StatusError, strings.Join(append(errs, warnings...), "; "))
	case len(warnings) > 0:
		return result(v1alpha1.FindingSidecarSetConditions, StatusWarning, strings.Join(warnings, "; "))
	}
	return result(v1alpha1.FindingSidecarSetConditions, StatusOK, fmt.Sprintf("no rollout stalled, no pod without its sidecars, no webhook receiving every pod among %s", f.setCount()))
}

// maxNamed is the most SidecarSets a check's message names; it counts the rest.
const maxNamed = 10

// checkOutage: which SidecarSets a pod create still depends on the server for. The pods a
// webhook-path SidecarSet selects are refused while the server is down (the injection webhooks
// fail closed); policies go on injecting. A SidecarSet asking for the policy path that the
// webhook serves is a warning, with the reason of its Injected condition.
func checkOutage(f *Facts) Result {
	var webhook, unmet []string
	policies := 0
	for _, ss := range f.injectingSets() {
		c := meta.FindStatusCondition(ss.conditions, v1alpha1.SidecarSetInjected)
		switch {
		case c == nil || c.Status != metav1.ConditionTrue:
		case c.Reason == string(apps.PathPolicy):
			policies++
		case c.Reason == string(apps.PathWebhook):
			webhook = append(webhook, ss.name)
			if ss.asks {
				unmet = append(unmet, ss.name+": "+c.Message)
			}
		}
	}
	sort.Strings(webhook)
	sort.Strings(unmet)
	if len(unmet) > 0 {
		return result(v1alpha1.FindingOutage, StatusWarning, fmt.Sprintf("%d SidecarSets ask for a policy and are served by the webhook, so their pods are refused while the server is down: %s",
			len(unmet), strings.Join(unmet, "; ")))
	}
	msg := fmt.Sprintf("while the server is down, the %d SidecarSets served by policies still inject", policies)
	if len(webhook) == 0 {
		return result(v1alpha1.FindingOutage, StatusOK, msg+"; no pod create depends on the server")
	}
	return result(v1alpha1.FindingOutage, StatusOK, fmt.Sprintf("%s; pods that one of the %d served by the webhook selects are refused: %s", msg, len(webhook), namedList(webhook)))
}

// namedList names the first maxNamed of names and counts the rest.
func namedList(names []string) string {
	if len(names) <= maxNamed {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamed], ", "), len(names)-maxNamed)
}
