// Package finding is the pure core of `kubectl sidecarset check`: what was read from the
// cluster (Facts) in, one finding per subject out (Assess). No I/O here; package check gathers
// the facts and prints the report.
//
// Each finding has a name of the API (the v1alpha1.Finding* constants), a category (an anchor of
// docs/plugin.md) and a status. A finding whose input could not be read is skipped when the read
// was forbidden or optional, an error otherwise; the pre-install findings are assessed always,
// the post-install ones only once the server is installed and unless Facts.Pre. The report is
// ordered by category, stably, so findings keep their order within one.
package finding

import (
	"crypto/x509"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/migrate"
)

// Status is a verdict: ok, a warning (works, but look), an error (exit 1) or skipped (does
// not apply: the server is not installed).
type Status string

const (
	StatusOK      Status = "ok"
	StatusWarning Status = "warning"
	StatusError   Status = "error"
	StatusSkipped Status = "skipped"
)

// Result is one subject's verdict: its category, what was found, what to do about it and
// where the docs explain it.
type Result struct {
	Category string `json:"category"`
	Name     string `json:"name"`
	Status   Status `json:"status"`
	Message  string `json:"message"`
	// Hint says what to do; empty for ok.
	Hint string `json:"hint,omitempty"`
	// Docs is the anchor of docs/plugin.md that explains the check.
	Docs string `json:"docs,omitempty"`
}

// Report is the command's output.
type Report struct {
	// Pre is whether only the pre-install checks ran (--pre).
	Pre bool `json:"pre"`
	// Installed is whether this server's APIServices exist.
	Installed bool     `json:"installed"`
	Checks    []Result `json:"checks"`
	// Counts counts the checks by status.
	Counts map[Status]int `json:"counts"`
}

// Problems names the findings that are errors.
func (r Report) Problems() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == StatusError {
			out = append(out, c.Name)
		}
	}
	return out
}

// failed reports whether any check is an error.
func (r Report) failed() bool {
	for _, c := range r.Checks {
		if c.Status == StatusError {
			return true
		}
	}
	return false
}

// claimedVersions are the versions of apps.kruise.io this server serves: its APIServices take
// them whole, so every custom resource of the group at those versions disappears from the API.
var claimedVersions = []string{"v1alpha1", "v1beta1"}

// certificateWarning is how long before expiry a certificate is reported: longer than the
// alert's 30 days, so that a check run every month or two sees it first.
const certificateWarning = 60 * 24 * time.Hour

// Facts is what check reads from the cluster.
type Facts struct {
	Now time.Time
	// Pre is set for --pre: only the pre-install checks are assessed.
	Pre bool
	// Unread are the reads that failed, by the name of the check they feed: a Forbidden one makes
	// the check skipped (what the user may not read is reported, not failed), any other an error.
	Unread map[string]Unread
	// KubernetesVersion is kube-apiserver's version (major.minor), "" when unread.
	KubernetesVersion string
	// PolicyAPI is whether discovery lists admissionregistration.k8s.io/v1
	// mutatingadmissionpolicies (policy injection), nil when unread.
	PolicyAPI *bool
	// ServedByServer is whether discovery lists sidecarsets/rollout in apps.kruise.io/v1alpha1:
	// this server serves the group (a CRD has no such subresource).
	ServedByServer bool
	// CRDs are the CustomResourceDefinitions of group apps.kruise.io.
	CRDs []apiextensionsv1.CustomResourceDefinition
	// Objects counts the objects of a CRD at a version ("plural.group/version"), for those that
	// could be listed; a CRD hidden by an APIService cannot be.
	Objects map[string]int
	// APIServices by name, of apiservice.Names; absent ones are missing.
	APIServices map[string]*apiregistrationv1.APIService
	// ServerService is the Service the APIServices should route to ("namespace/name").
	ServerService string
	// OpenKruiseWebhooks are OpenKruise's webhook configurations found ("kind/name").
	OpenKruiseWebhooks []string
	// OpenKruiseManager is OpenKruise's manager Deployment, nil when absent.
	OpenKruiseManager *appsv1.Deployment
	// Template and Active are the shipped injection webhook configuration and the one the server
	// writes; nil when absent.
	Template, Active *admissionregistrationv1.MutatingWebhookConfiguration
	// Policies counts the MutatingAdmissionPolicies the server owns; -1 when the cluster serves
	// none.
	Policies int
	// SidecarSets is a quorum read of every SidecarSet through the server (it reads its etcd), or
	// the error it gave.
	SidecarSets    []v1alpha1.SidecarSet
	SidecarSetsErr error
	// NamespacedSidecarSets is a read of every NamespacedSidecarSet through the server (none when
	// it serves no such kind), or the error it gave; NamespacedScope is the namespace read when
	// only one could be ("" for all).
	NamespacedSidecarSets    []v1alpha1.NamespacedSidecarSet
	NamespacedSidecarSetsErr error
	NamespacedScope          string
	// Health is the server's verbose /healthz (its etcd check among them), as it answers through
	// kube-apiserver's service proxy; nil when unread.
	Health *Health
	// StorageBytes is the size of the server's etcd database as the server reports it on /metrics
	// (apiserver_storage_size_bytes), -1 when unread; EtcdQuota is the etcd backend quota it is
	// compared with (--etcd-quota-bytes).
	StorageBytes, EtcdQuota int64
	// Certificates are the installation's certificates from their Secrets, those readable.
	Certificates []NamedPEM
	// TerminatingNamespaces are the Namespaces being deleted (phase Terminating), with the
	// conditions by which the namespace controller says what holds them up.
	TerminatingNamespaces []corev1.Namespace

	// Install is what the installation will create (--server-namespace, --certificates,
	// --priority-class), for the prerequisites.
	Install InstallTargets
	// InstallerAccess is kube-apiserver's answer for each of InstallerPermissions(Install); nil
	// when not reviewed.
	InstallerAccess []AccessReview
	// StorageClasses are the cluster's; EtcdStorageClass the one given for etcd's claims
	// (--etcd-storage-class), "" for the default.
	StorageClasses   []storagev1.StorageClass
	EtcdStorageClass string
	// FrontProxy is the ConfigMap kube-system/extension-apiserver-authentication, nil when absent.
	FrontProxy *corev1.ConfigMap
	// CertManagerResources are the resources cert-manager.io/v1 serves, nil when it is not served
	// (read with --certificates cert-manager only).
	CertManagerResources []string
	// PluginVersion is this plugin's version (pkg/version), compared with the server's.
	PluginVersion string
}

// Unread is a read that failed.
type Unread struct {
	What      string `json:"what"`
	Err       string `json:"error"`
	Forbidden bool   `json:"forbidden"`
	// Optional reads (the server's /healthz and /metrics through the service proxy, which a
	// Service without ports or a server refusing anonymous /metrics does not serve) are skipped
	// when they fail.
	Optional bool `json:"optional,omitempty"`
}

// Health is the server's verbose health: each named check and whether it passed.
type Health struct {
	Checks map[string]bool
	Failed []string // the failing lines as the server gives them
}

// Installed reports whether any of this server's APIServices exists, or, when they could not be
// read, whether discovery shows the server serving its group.
func (f *Facts) Installed() bool { return len(f.APIServices) > 0 || f.ServedByServer }

// result is a check's verdict; Assess adds the category, hint and docs anchor.
func result(name string, status Status, message string) Result {
	return Result{Name: name, Status: status, Message: message}
}

// checkInfo is a check's category (docs/plugin.md has an anchor per category) and what to do
// when it is not ok.
type checkInfo struct {
	category, hint string
}

// The check categories, in report order.
const (
	categoryKubernetesAPI     = "kubernetes-api"
	categoryKubernetesVersion = "kubernetes-version"
	categoryOpenKruise        = "openkruise"
	categoryServer            = "sidecarset-apiserver"
	categoryEtcd              = "etcd"
	categoryCertificates      = "certificates"
	categorySidecarSets       = "sidecarsets"
)

// docsURL is where the findings' docs anchors are.
const docsURL = "https://github.com/sidecarset/apiserver/blob/main/docs/plugin.md#"

// checkInfos are every check's category and hint.
var checkInfos = map[string]checkInfo{
	v1alpha1.FindingConnectivity:         {categoryKubernetesAPI, "check --kubeconfig, --context, --server and the credentials"},
	v1alpha1.FindingKubernetesVersion:    {categoryKubernetesVersion, "upgrade the cluster to Kubernetes 1.30 or later (the ValidatingAdmissionPolicy guarding the server's writes is v1 from 1.30)"},
	v1alpha1.FindingPolicyAPI:            {categoryKubernetesVersion, "policy injection needs admissionregistration.k8s.io/v1 MutatingAdmissionPolicy (Kubernetes 1.36); until then the webhook injects every SidecarSet (--injection=webhook); restart the server after the cluster serves it"},
	v1alpha1.FindingOpenKruiseCRDs:       {categoryOpenKruise, "do not install beside OpenKruise's workloads; to replace OpenKruise's SidecarSet, run kubectl sidecarset migrate --from-cluster --export FILE, then remove OpenKruise's webhook configurations and CRD"},
	v1alpha1.FindingOpenKruiseWebhooks:   {categoryOpenKruise, "uninstall OpenKruise (helm uninstall kruise -n kruise-system) or delete its webhook configurations once its SidecarSets are migrated: its mutating webhook would inject pods a second time, or refuse them when its manager is gone"},
	v1alpha1.FindingOpenKruiseManager:    {categoryOpenKruise, "uninstall OpenKruise (helm uninstall kruise -n kruise-system) after kubectl sidecarset migrate --from-cluster --export FILE"},
	v1alpha1.FindingAPIServiceConflicts:  {categoryOpenKruise, "delete the APIServices of apps.kruise.io that route to another service, or install into that namespace"},
	v1alpha1.FindingOpenKruiseFeatures:   {categoryOpenKruise, "replace OpenKruise's container launch priority and Job sidecar terminator with native sidecars (initContainers with restartPolicy: Always)"},
	v1alpha1.FindingServer:               {categoryServer, "install the server (helm install sidecarset-apiserver charts/sidecarset-apiserver), then run check again, with --wait 5m"},
	v1alpha1.FindingAPIServices:          {categoryServer, "kubectl describe apiservice v1alpha1.apps.kruise.io; the server's pods must be ready (kubectl -n NAMESPACE get pods) and its Service must have endpoints"},
	v1alpha1.FindingNamespaceDeletion:    {categoryServer, namespaceDeletionHintDown},
	v1alpha1.FindingServerHealth:         {categoryServer, "kubectl -n NAMESPACE logs deploy/sidecarset-apiserver; a failing check names the part that is not ready"},
	v1alpha1.FindingWebhooks:             {categoryServer, "the server's leader writes NAME-active from the shipped template: check that its pods run and hold the lease (kubectl -n NAMESPACE get lease)"},
	v1alpha1.FindingVersion:              {categoryServer, "the leader records its version when it writes the webhooks; wait for it, or upgrade a server that predates it"},
	v1alpha1.FindingStorage:              {categoryEtcd, "the server cannot read its etcd: kubectl -n NAMESPACE get pods -l app.kubernetes.io/component=etcd, and the server's logs"},
	v1alpha1.FindingEtcdHealth:           {categoryEtcd, "the server's etcd check fails: check the etcd members and the server's etcd flags (--etcd-servers, certificates)"},
	v1alpha1.FindingEtcdQuota:            {categoryEtcd, "compact and defragment etcd, or raise --quota-backend-bytes (and --etcd-quota-bytes here); once the quota is reached etcd refuses every write"},
	v1alpha1.FindingInstallerRBAC:        {categoryPrerequisites, "ask a cluster administrator to install the server, or to grant you these creates (cluster-admin has them all); creating the ClusterRoles also needs every permission they grant, or escalate on clusterroles"},
	v1alpha1.FindingStorageClass:         {categoryPrerequisites, "mark a StorageClass the default (annotation storageclass.kubernetes.io/is-default-class: \"true\"), or install with --set etcd.persistence.storageClassName=NAME (and --etcd-storage-class NAME here)"},
	v1alpha1.FindingFrontProxyCA:         {categoryPrerequisites, "start kube-apiserver with the aggregation layer's flags (--requestheader-client-ca-file, --proxy-client-cert-file, --proxy-client-key-file, --requestheader-allowed-names, --requestheader-*-headers); managed clusters have them"},
	v1alpha1.FindingCertManager:          {categoryPrerequisites, "install cert-manager (its CRDs and webhook) first and wait for its Deployments, or install with certificates.source=self-managed (the default, nothing to install), secrets (hack/deploy-certs.sh) or existingSecrets"},
	v1alpha1.FindingVersionSkew:          {categoryServer, "use the plugin of the server's version (kubectl sidecarset version shows both; docs/compatibility.md)"},
	v1alpha1.FindingCertificates:         {categoryCertificates, "renew the certificates named (self-managed ones and cert-manager's renew themselves: see the runbook's SidecarSetCertificateExpiresSoon; hack/deploy-certs.sh otherwise) and the caBundle of the APIServices"},
	v1alpha1.FindingInjection:            {categorySidecarSets, "kubectl get sidecarset NAME -o yaml: the Injected condition's reason and message say why"},
	v1alpha1.FindingOutage:               {categorySidecarSets, "ask for policies for the SidecarSets whose pods must be created while the server is down (annotation apps.kruise.io/injection-path: Policy, docs/policy-injection.md#what-survives-an-outage); the reason named says what keeps one on the webhook"},
	v1alpha1.FindingSidecarSetConditions: {categorySidecarSets, "see the condition's message; kubectl sidecarset explain and kubectl sidecarset rollout status NAME tell more"},
}

// categoryOrder orders the report.
var categoryOrder = []string{categoryKubernetesAPI, categoryKubernetesVersion, categoryOpenKruise, categoryPrerequisites, categoryServer, categoryEtcd, categoryCertificates, categorySidecarSets}

// Assess turns the facts into the report: the pre-install checks, then, once the server is
// installed and unless --pre, the post-install ones. A check whose input could not be read is
// skipped (Forbidden) or an error (any other failure).
func Assess(f *Facts) Report {
	r := Report{Pre: f.Pre, Installed: f.Installed()}
	r.Checks = []Result{checkConnectivity(f), checkKubernetesVersion(f), checkPolicyAPI(f), checkCRDs(f), checkOpenKruiseWebhooks(f),
		checkOpenKruiseManager(f), checkAPIServiceConflicts(f)}
	if f.Pre || !r.Installed {
		r.Checks = append(r.Checks, checkInstallerRBAC(f), checkStorageClass(f), checkFrontProxyCA(f), checkCertManager(f))
	}
	switch {
	case f.Pre:
	case !r.Installed:
		r.Checks = append(r.Checks, result(v1alpha1.FindingServer, StatusSkipped, "not installed: no APIService "+strings.Join(apiservice.Names, ", ")))
	default:
		r.Checks = append(r.Checks, checkAPIServices(f), checkNamespaceDeletion(f), checkServerHealth(f), checkWebhooks(f), checkVersion(f), checkVersionSkew(f), checkStorage(f),
			checkEtcdHealth(f), checkEtcdQuota(f), checkCertificates(f), checkInjection(f), checkOutage(f), checkConditions(f), checkOpenKruiseFeatures(f))
	}
	for i := range r.Checks {
		c := &r.Checks[i]
		if u, ok := f.Unread[c.Name]; ok {
			c.Status, c.Message = StatusError, "could not read "+u.What+": "+u.Err
			switch {
			case u.Forbidden:
				c.Status, c.Message = StatusSkipped, "not allowed to read "+u.What+": "+u.Err
			case u.Optional:
				c.Status, c.Message = StatusSkipped, "could not read "+u.What+": "+u.Err
			}
		}
		info := checkInfos[c.Name]
		c.Category, c.Docs = info.category, docsURL+info.category
		if c.Status != StatusOK && c.Hint == "" {
			c.Hint = info.hint
		}
		switch unread := f.Unread[c.Name]; {
		case unread.Forbidden:
			c.Hint = "ask for read access to " + unread.What + ", or run check as a cluster administrator"
		case unread.Optional:
			c.Hint = "check reads it through kube-apiserver's service proxy: it needs get on services/proxy in the server's namespace, " +
				"a Service with the APIService's port, and for /metrics a server that authorizes the anonymous proxied request"
		}
	}
	slices.SortStableFunc(r.Checks, func(a, b Result) int {
		return slices.Index(categoryOrder, a.Category) - slices.Index(categoryOrder, b.Category)
	})
	r.Counts = map[Status]int{}
	for _, c := range r.Checks {
		r.Counts[c.Status]++
	}
	return r
}

// checkCRDs: the custom resources of apps.kruise.io this server's APIServices hide (or would hide
// once installed). OpenKruise's SidecarSet is expected (it is replaced); any other kind at a
// claimed version is an error.
func checkCRDs(f *Facts) Result {
	var hidden, replaced []string
	for _, crd := range f.CRDs {
		for _, v := range crd.Spec.Versions {
			if !v.Served || !slices.Contains(claimedVersions, v.Name) {
				continue
			}
			what := fmt.Sprintf("%s %s (%s, %s)", crd.Spec.Group+"/"+v.Name, crd.Spec.Names.Kind, crd.Name, f.objectCount(crd.Name, v.Name))
			if crd.Spec.Names.Kind == "SidecarSet" {
				replaced = append(replaced, what)
			} else {
				hidden = append(hidden, what)
			}
		}
	}
	verb := "would hide"
	if f.Installed() {
		verb = "hides"
	}
	switch {
	case len(hidden) > 0:
		return result(v1alpha1.FindingOpenKruiseCRDs, StatusError, fmt.Sprintf("this server's APIServices (%s) %s every kind of apps.kruise.io at those versions: %s "+
			"disappear from the API (and from garbage collection and namespace deletion); do not install it beside OpenKruise's other workloads",
			strings.Join(claimedVersions, ", "), verb, strings.Join(hidden, "; ")))
	case len(replaced) > 0:
		return result(v1alpha1.FindingOpenKruiseCRDs, StatusWarning, fmt.Sprintf("%s: this server replaces OpenKruise's SidecarSet; export its SidecarSets, remove its webhook and CRD, then re-create them on this server (docs/migration.md)",
			strings.Join(replaced, "; ")))
	}
	return result(v1alpha1.FindingOpenKruiseCRDs, StatusOK, "no custom resource of apps.kruise.io at "+strings.Join(claimedVersions, " or "))
}

func (f *Facts) objectCount(crd, version string) string {
	n, ok := f.Objects[crd+"/"+version]
	switch {
	case !ok:
		return "objects cannot be counted: the APIService serves that version"
	case n == 1:
		return "1 object"
	}
	return fmt.Sprintf("%d objects", n)
}

// checkAPIServices: every APIService present, routed to a service (not served by kube-apiserver
// itself, as a CRD's would be) and Available.
func checkAPIServices(f *Facts) Result {
	var problems []string
	for _, name := range apiservice.Names {
		as := f.APIServices[name]
		switch {
		case as == nil:
			problems = append(problems, name+" is missing")
		case as.Spec.Service == nil:
			problems = append(problems, name+" is served by kube-apiserver itself (no service): a CRD, not this server, serves it")
		default:
			if c := availability(as); c != "" {
				problems = append(problems, name+" is not Available: "+c)
			}
		}
	}
	if len(problems) > 0 {
		return result(v1alpha1.FindingAPIServices, StatusError, strings.Join(problems, "; "))
	}
	return result(v1alpha1.FindingAPIServices, StatusOK, "Available: "+strings.Join(apiservice.Names, ", ")+" (the server is ready)")
}

// availability is "" for an Available APIService, else why not.
func availability(as *apiregistrationv1.APIService) string {
	for _, c := range as.Status.Conditions {
		if c.Type == apiregistrationv1.Available {
			if c.Status == apiregistrationv1.ConditionTrue {
				return ""
			}
			return c.Reason + ": " + c.Message
		}
	}
	return "no Available condition yet"
}

// checkStorage: the quorum reads of the SidecarSets and NamespacedSidecarSets went through the
// server to its etcd.
func checkStorage(f *Facts) Result {
	switch {
	case f.SidecarSetsErr != nil:
		return result(v1alpha1.FindingStorage, StatusError, "listing SidecarSets (a quorum read of the server's etcd) failed: "+f.SidecarSetsErr.Error())
	case f.NamespacedSidecarSetsErr != nil:
		return result(v1alpha1.FindingStorage, StatusError, "listing NamespacedSidecarSets (a quorum read of the server's etcd) failed: "+f.NamespacedSidecarSetsErr.Error())
	}
	return result(v1alpha1.FindingStorage, StatusOK, fmt.Sprintf("the server read %s from its etcd (quorum read)", f.setCount()))
}

// setCount counts the SidecarSets, and the NamespacedSidecarSets when there are any.
func (f *Facts) setCount() string {
	n := fmt.Sprintf("%d SidecarSets", len(f.SidecarSets))
	if len(f.NamespacedSidecarSets) > 0 {
		n += fmt.Sprintf(" and %d NamespacedSidecarSets", len(f.NamespacedSidecarSets))
	}
	return n
}

// checkWebhooks: the shipped template and the configuration the server renders from it.
func checkWebhooks(f *Facts) Result {
	switch {
	case f.Template == nil:
		return result(v1alpha1.FindingWebhooks, StatusError, "the injection webhook configuration (the template shipped with the deployment) is missing: no pod is injected by the webhook")
	case f.Active == nil:
		return result(v1alpha1.FindingWebhooks, StatusError, fmt.Sprintf("%s exists but the server has not written its active configuration: is its leader running?", f.Template.Name))
	case f.Active.Labels[apps.ManagedByLabel] != apps.ManagedByValue:
		return result(v1alpha1.FindingWebhooks, StatusError, f.Active.Name+" is not labelled "+apps.ManagedByLabel+"="+apps.ManagedByValue+": it is not the server's")
	}
	msg := fmt.Sprintf("%s: %d webhooks rendered from %s", f.Active.Name, len(f.Active.Webhooks), f.Template.Name)
	if f.Policies >= 0 {
		msg += fmt.Sprintf("; %d MutatingAdmissionPolicies owned by the server", f.Policies)
	} else {
		msg += "; the cluster serves no MutatingAdmissionPolicy (every SidecarSet is injected by the webhook)"
	}
	return result(v1alpha1.FindingWebhooks, StatusOK, msg)
}

// checkVersion: the version the server's leader recorded.
func checkVersion(f *Facts) Result {
	if f.Active == nil || f.Active.Annotations[apps.ServerVersionAnnotation] == "" {
		return result(v1alpha1.FindingVersion, StatusWarning, "the server has recorded no version (annotation "+apps.ServerVersionAnnotation+"): its leader has not written the webhooks, or predates it")
	}
	return result(v1alpha1.FindingVersion, StatusOK, "server "+f.Active.Annotations[apps.ServerVersionAnnotation])
}

// injecting is one object whose Injected condition check reads.
type injecting struct {
	name       string // the SidecarSet's name, or "namespacedsidecarset NS/NAME"
	generation int64
	conditions []metav1.Condition
	asks       bool // a cluster SidecarSet asking for the policy path (apps.InjectionPathAnnotation)
}

// injectingSets are the SidecarSets and the NamespacedSidecarSets.
func (f *Facts) injectingSets() []injecting {
	out := make([]injecting, 0, len(f.SidecarSets)+len(f.NamespacedSidecarSets))
	for _, ss := range f.SidecarSets {
		out = append(out, injecting{ss.Name, ss.Generation, ss.Status.Conditions, apps.AsksForPolicy(ss.Annotations)})
	}
	for _, n := range f.NamespacedSidecarSets {
		out = append(out, injecting{"namespacedsidecarset " + n.Namespace + "/" + n.Name, n.Generation, n.Status.Conditions, false})
	}
	return out
}

// checkInjection: every SidecarSet's and NamespacedSidecarSet's Injected condition is current and
// True (paused ones are reported, not failed).
func checkInjection(f *Facts) Result {
	var failing, paused []string
	sets := f.injectingSets()
	for _, ss := range sets {
		c := meta.FindStatusCondition(ss.conditions, v1alpha1.SidecarSetInjected)
		switch {
		case c == nil || c.ObservedGeneration != ss.generation:
			failing = append(failing, ss.name+": not yet observed by the server")
		case c.Status == metav1.ConditionTrue:
		case c.Reason == apps.ReasonInjectionPaused || c.Reason == apps.ReasonNoSelector:
			paused = append(paused, ss.name+" ("+c.Reason+")")
		default:
			failing = append(failing, ss.name+": "+c.Reason+": "+c.Message)
		}
	}
	sort.Strings(failing)
	sort.Strings(paused)
	switch {
	case len(failing) > 0:
		return result(v1alpha1.FindingInjection, StatusError, strings.Join(failing, "; "))
	case len(paused) > 0:
		return result(v1alpha1.FindingInjection, StatusWarning, fmt.Sprintf("%d of %s inject; not injecting on purpose: %s", len(sets)-len(paused), f.setCount(), strings.Join(paused, ", ")))
	}
	return result(v1alpha1.FindingInjection, StatusOK, fmt.Sprintf("all %s inject new pods", f.setCount()))
}

// checkOpenKruiseFeatures: the SidecarSets and NamespacedSidecarSets that ask for OpenKruise
// features outside the SidecarSet API (migrate.Reliances: container launch priority, the Job
// sidecar terminator), which this server does not provide: a warning naming each, its fields, and
// what changes.
func checkOpenKruiseFeatures(f *Facts) Result {
	var items []string
	var all []migrate.Reliance
	for _, s := range f.specs() {
		rs := migrate.Reliances(s.spec)
		if len(rs) == 0 {
			continue
		}
		items = append(items, s.name+": "+migrate.SummarizeReliances(rs))
		all = append(all, rs...)
	}
	if len(items) == 0 {
		return result(v1alpha1.FindingOpenKruiseFeatures, StatusOK, fmt.Sprintf("none of %s relies on OpenKruise's %s or %s",
			f.setCount(), migrate.FeatureLaunchPriority, migrate.FeatureJobSidecarTerminator))
	}
	var consequences []string
	for _, feature := range []string{migrate.FeatureLaunchPriority, migrate.FeatureJobSidecarTerminator} {
		if slices.ContainsFunc(all, func(r migrate.Reliance) bool { return r.Feature == feature }) {
			consequences = append(consequences, "OpenKruise's "+feature+": "+migrate.Consequence(feature))
		}
	}
	return result(v1alpha1.FindingOpenKruiseFeatures, StatusWarning, fmt.Sprintf("%d of %s rely on OpenKruise features outside the SidecarSet API, which do not work on this server: %s. %s",
		len(items), f.setCount(), strings.Join(items, "; "), strings.Join(consequences, "; ")))
}

// namedSpec is the spec of a SidecarSet or NamespacedSidecarSet, named as in checkInjection.
type namedSpec struct {
	name string
	spec *v1alpha1.SidecarSetSpec
}

// specs are the specs of the SidecarSets, then of the NamespacedSidecarSets.
func (f *Facts) specs() []namedSpec {
	out := make([]namedSpec, 0, len(f.SidecarSets)+len(f.NamespacedSidecarSets))
	for i := range f.SidecarSets {
		out = append(out, namedSpec{f.SidecarSets[i].Name, &f.SidecarSets[i].Spec})
	}
	for i := range f.NamespacedSidecarSets {
		n := &f.NamespacedSidecarSets[i]
		out = append(out, namedSpec{"namespacedsidecarset " + n.Namespace + "/" + n.Name, &n.Spec})
	}
	return out
}

// NamedPEM is a certificate, or with Bundle a trust bundle, in PEM, and where it was read.
type NamedPEM struct {
	Name   string
	PEM    []byte
	Bundle bool
}

// expiring is a certificate and where it was read.
type expiring struct {
	where string
	cert  *x509.Certificate
}

// checkCertificates: the CAs kube-apiserver trusts for the server (APIServices, webhooks) and the
// installation's certificates whose Secrets are readable (serving, etcd's server, peer and client
// certificates, their CAs): none expired, none within 60 days, each reported. Of a trust bundle
// the certificate that expires last counts (a bundle holds a CA's successor, or the CA it
// replaced, beside it).
func checkCertificates(f *Facts) Result {
	var all []expiring
	var bad []string
	consider := func(p NamedPEM) {
		certs, err := cert.ParseCertsPEM(p.PEM)
		if err != nil {
			bad = append(bad, p.Name+": "+err.Error())
			return
		}
		c := certs[0]
		for _, o := range certs[1:] {
			if p.Bundle && o.NotAfter.After(c.NotAfter) {
				c = o
			}
		}
		all = append(all, expiring{p.Name, c})
	}
	for _, name := range apiservice.Names {
		if as := f.APIServices[name]; as != nil && len(as.Spec.CABundle) > 0 {
			consider(NamedPEM{"APIService " + name, as.Spec.CABundle, true})
		}
	}
	if f.Active != nil {
		for _, w := range f.Active.Webhooks {
			if len(w.ClientConfig.CABundle) > 0 {
				consider(NamedPEM{"webhook " + w.Name, w.ClientConfig.CABundle, true})
			}
		}
	}
	for _, p := range f.Certificates {
		consider(p)
	}
	if len(bad) > 0 {
		return result(v1alpha1.FindingCertificates, StatusError, strings.Join(bad, "; "))
	}
	if len(all) == 0 {
		return result(v1alpha1.FindingCertificates, StatusWarning, "no CA bundle found on the APIServices or webhooks (insecureSkipTLSVerify?)")
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].cert.NotAfter.Before(all[j].cert.NotAfter) })
	var expired, soon []string
	for _, e := range all {
		left := e.cert.NotAfter.Sub(f.Now)
		switch {
		case left <= 0:
			expired = append(expired, fmt.Sprintf("%s (%s) on %s", e.where, e.cert.Subject.CommonName, e.cert.NotAfter.UTC().Format(time.RFC3339)))
		case left < certificateWarning:
			soon = append(soon, fmt.Sprintf("%s (%s) in %d days", e.where, e.cert.Subject.CommonName, int(left.Hours()/24)))
		}
	}
	switch {
	case len(expired) > 0:
		return result(v1alpha1.FindingCertificates, StatusError, "expired: "+strings.Join(append(expired, soon...), "; "))
	case len(soon) > 0:
		return result(v1alpha1.FindingCertificates, StatusWarning, "expiring within 60 days: "+strings.Join(soon, "; "))
	}
	first := all[0]
	return result(v1alpha1.FindingCertificates, StatusOK, fmt.Sprintf("%d days left: the first to expire is %s (%s), on %s", int(first.cert.NotAfter.Sub(f.Now).Hours()/24),
		first.where, first.cert.Subject.CommonName, first.cert.NotAfter.UTC().Format(time.RFC3339)))
}
