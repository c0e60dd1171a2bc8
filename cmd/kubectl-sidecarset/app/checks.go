package app

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/migrate"
)

// The pure core of `kubectl sidecarset check`: what was read from the cluster (clusterFacts) in,
// one verdict per subject out. No I/O here; check.go gathers the facts.

// checkStatus is a verdict: ok, a warning (works, but look), an error (exit 1) or skipped (does
// not apply: the server is not installed).
type checkStatus string

const (
	checkOK      checkStatus = "ok"
	checkWarning checkStatus = "warning"
	checkError   checkStatus = "error"
	checkSkipped checkStatus = "skipped"
)

// checkResult is one subject's verdict.
type checkResult struct {
	Name    string      `json:"name"`
	Status  checkStatus `json:"status"`
	Message string      `json:"message"`
}

// checkReport is the command's output.
type checkReport struct {
	// Installed is whether this server's APIServices exist.
	Installed bool          `json:"installed"`
	Checks    []checkResult `json:"checks"`
}

// failed reports whether any check is an error.
func (r checkReport) failed() bool {
	for _, c := range r.Checks {
		if c.Status == checkError {
			return true
		}
	}
	return false
}

// claimedVersions are the versions of apps.kruise.io this server serves: its APIServices take
// them whole, so every custom resource of the group at those versions disappears from the API.
var claimedVersions = []string{"v1alpha1", "v1beta1"}

// apiServiceNames are the APIServices this server registers.
var apiServiceNames = []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io", "v1.admission.kruise.io"}

// certificateWarning is how long before expiry a certificate is reported.
const certificateWarning = 30 * 24 * time.Hour

// clusterFacts is what check reads from the cluster.
type clusterFacts struct {
	Now time.Time
	// CRDs are the CustomResourceDefinitions of group apps.kruise.io.
	CRDs []apiextensionsv1.CustomResourceDefinition
	// Objects counts the objects of a CRD at a version ("plural.group/version"), for those that
	// could be listed; a CRD hidden by an APIService cannot be.
	Objects map[string]int
	// APIServices by name, of apiServiceNames; absent ones are missing.
	APIServices map[string]*apiregistrationv1.APIService
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
	// it serves no such kind), or the error it gave.
	NamespacedSidecarSets    []v1alpha1.NamespacedSidecarSet
	NamespacedSidecarSetsErr error
	// ServingCertificate is the server's serving certificate (PEM) from its Secret, when readable.
	ServingCertificate []byte
}

// installed reports whether any of this server's APIServices exists.
func (f *clusterFacts) installed() bool { return len(f.APIServices) > 0 }

// assessCluster turns the facts into the report.
func assessCluster(f *clusterFacts) checkReport {
	r := checkReport{Installed: f.installed(), Checks: []checkResult{checkCRDs(f)}}
	if !r.Installed {
		r.Checks = append(r.Checks, checkResult{"server", checkSkipped, "not installed: no APIService " + strings.Join(apiServiceNames, ", ")})
		return r
	}
	return appendChecks(r, checkAPIServices(f), checkStorage(f), checkWebhooks(f), checkVersion(f), checkInjection(f),
		checkOpenKruiseFeatures(f), checkCertificates(f))
}

func appendChecks(r checkReport, cs ...checkResult) checkReport {
	r.Checks = append(r.Checks, cs...)
	return r
}

// checkCRDs: the custom resources of apps.kruise.io this server's APIServices hide (or would hide
// once installed). OpenKruise's SidecarSet is expected (it is replaced); any other kind at a
// claimed version is an error.
func checkCRDs(f *clusterFacts) checkResult {
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
	if f.installed() {
		verb = "hides"
	}
	switch {
	case len(hidden) > 0:
		return checkResult{"openkruise-crds", checkError, fmt.Sprintf("this server's APIServices (%s) %s every kind of apps.kruise.io at those versions: %s "+
			"disappear from the API (and from garbage collection and namespace deletion); do not install it beside OpenKruise's other workloads",
			strings.Join(claimedVersions, ", "), verb, strings.Join(hidden, "; "))}
	case len(replaced) > 0:
		return checkResult{"openkruise-crds", checkWarning, fmt.Sprintf("%s: this server replaces OpenKruise's SidecarSet; export its SidecarSets, remove its webhook and CRD, then re-create them on this server (README: Deploying to a real cluster)",
			strings.Join(replaced, "; "))}
	}
	return checkResult{"openkruise-crds", checkOK, "no custom resource of apps.kruise.io at " + strings.Join(claimedVersions, " or ")}
}

func (f *clusterFacts) objectCount(crd, version string) string {
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
func checkAPIServices(f *clusterFacts) checkResult {
	var problems []string
	for _, name := range apiServiceNames {
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
		return checkResult{"apiservices", checkError, strings.Join(problems, "; ")}
	}
	return checkResult{"apiservices", checkOK, "Available: " + strings.Join(apiServiceNames, ", ") + " (the server is ready)"}
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
func checkStorage(f *clusterFacts) checkResult {
	switch {
	case f.SidecarSetsErr != nil:
		return checkResult{"storage", checkError, "listing SidecarSets (a quorum read of the server's etcd) failed: " + f.SidecarSetsErr.Error()}
	case f.NamespacedSidecarSetsErr != nil:
		return checkResult{"storage", checkError, "listing NamespacedSidecarSets (a quorum read of the server's etcd) failed: " + f.NamespacedSidecarSetsErr.Error()}
	}
	return checkResult{"storage", checkOK, fmt.Sprintf("the server read %s from its etcd (quorum read)", f.setCount())}
}

// setCount counts the SidecarSets, and the NamespacedSidecarSets when there are any.
func (f *clusterFacts) setCount() string {
	n := fmt.Sprintf("%d SidecarSets", len(f.SidecarSets))
	if len(f.NamespacedSidecarSets) > 0 {
		n += fmt.Sprintf(" and %d NamespacedSidecarSets", len(f.NamespacedSidecarSets))
	}
	return n
}

// checkWebhooks: the shipped template and the configuration the server renders from it.
func checkWebhooks(f *clusterFacts) checkResult {
	switch {
	case f.Template == nil:
		return checkResult{"webhooks", checkError, "the injection webhook configuration (the template shipped with the deployment) is missing: no pod is injected by the webhook"}
	case f.Active == nil:
		return checkResult{"webhooks", checkError, fmt.Sprintf("%s exists but the server has not written its active configuration: is its leader running?", f.Template.Name)}
	case f.Active.Labels[apps.ManagedByLabel] != apps.ManagedByValue:
		return checkResult{"webhooks", checkError, f.Active.Name + " is not labelled " + apps.ManagedByLabel + "=" + apps.ManagedByValue + ": it is not the server's"}
	}
	msg := fmt.Sprintf("%s: %d webhooks rendered from %s", f.Active.Name, len(f.Active.Webhooks), f.Template.Name)
	if f.Policies >= 0 {
		msg += fmt.Sprintf("; %d MutatingAdmissionPolicies owned by the server", f.Policies)
	} else {
		msg += "; the cluster serves no MutatingAdmissionPolicy (every SidecarSet is injected by the webhook)"
	}
	return checkResult{"webhooks", checkOK, msg}
}

// checkVersion: the version the server's leader recorded.
func checkVersion(f *clusterFacts) checkResult {
	if f.Active == nil || f.Active.Annotations[apps.ServerVersionAnnotation] == "" {
		return checkResult{"version", checkWarning, "the server has recorded no version (annotation " + apps.ServerVersionAnnotation + "): its leader has not written the webhooks, or predates it"}
	}
	return checkResult{"version", checkOK, "server " + f.Active.Annotations[apps.ServerVersionAnnotation]}
}

// injecting is one object whose Injected condition check reads.
type injecting struct {
	name       string // the SidecarSet's name, or "namespacedsidecarset NS/NAME"
	generation int64
	conditions []metav1.Condition
}

// injectingSets are the SidecarSets and the NamespacedSidecarSets.
func (f *clusterFacts) injectingSets() []injecting {
	out := make([]injecting, 0, len(f.SidecarSets)+len(f.NamespacedSidecarSets))
	for _, ss := range f.SidecarSets {
		out = append(out, injecting{ss.Name, ss.Generation, ss.Status.Conditions})
	}
	for _, n := range f.NamespacedSidecarSets {
		out = append(out, injecting{"namespacedsidecarset " + n.Namespace + "/" + n.Name, n.Generation, n.Status.Conditions})
	}
	return out
}

// checkInjection: every SidecarSet's and NamespacedSidecarSet's Injected condition is current and
// True (paused ones are reported, not failed).
func checkInjection(f *clusterFacts) checkResult {
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
		return checkResult{"injection", checkError, strings.Join(failing, "; ")}
	case len(paused) > 0:
		return checkResult{"injection", checkWarning, fmt.Sprintf("%d of %s inject; not injecting on purpose: %s", len(sets)-len(paused), f.setCount(), strings.Join(paused, ", "))}
	}
	return checkResult{"injection", checkOK, fmt.Sprintf("all %s inject new pods", f.setCount())}
}

// checkOpenKruiseFeatures: the SidecarSets and NamespacedSidecarSets that ask for OpenKruise
// features outside the SidecarSet API (migrate.Reliances: container launch priority, the Job
// sidecar terminator), which this server does not provide: a warning naming each, its fields, and
// what changes.
func checkOpenKruiseFeatures(f *clusterFacts) checkResult {
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
		return checkResult{"openkruise-features", checkOK, fmt.Sprintf("none of %s relies on OpenKruise's %s or %s",
			f.setCount(), migrate.FeatureLaunchPriority, migrate.FeatureJobSidecarTerminator)}
	}
	var consequences []string
	for _, feature := range []string{migrate.FeatureLaunchPriority, migrate.FeatureJobSidecarTerminator} {
		if slices.ContainsFunc(all, func(r migrate.Reliance) bool { return r.Feature == feature }) {
			consequences = append(consequences, "OpenKruise's "+feature+": "+migrate.Consequence(feature))
		}
	}
	return checkResult{"openkruise-features", checkWarning, fmt.Sprintf("%d of %s rely on OpenKruise features outside the SidecarSet API, which do not work on this server: %s. %s",
		len(items), f.setCount(), strings.Join(items, "; "), strings.Join(consequences, "; "))}
}

// namedSpec is the spec of a SidecarSet or NamespacedSidecarSet, named as in checkInjection.
type namedSpec struct {
	name string
	spec *v1alpha1.SidecarSetSpec
}

// specs are the specs of the SidecarSets, then of the NamespacedSidecarSets.
func (f *clusterFacts) specs() []namedSpec {
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

// checkCertificates: the CAs kube-apiserver trusts for the server (APIServices, webhooks) and the
// server's own certificate, when its Secret is readable: none expired, none within 30 days.
func checkCertificates(f *clusterFacts) checkResult {
	var soonest *x509.Certificate
	var where string
	var bad []string
	consider := func(name string, bundle []byte) {
		certs, err := parseCertificates(bundle)
		if err != nil {
			bad = append(bad, name+": "+err.Error())
			return
		}
		for _, c := range certs {
			if soonest == nil || c.NotAfter.Before(soonest.NotAfter) {
				soonest, where = c, name
			}
		}
	}
	for _, name := range apiServiceNames {
		if as := f.APIServices[name]; as != nil && len(as.Spec.CABundle) > 0 {
			consider("APIService "+name, as.Spec.CABundle)
		}
	}
	if f.Active != nil {
		for _, w := range f.Active.Webhooks {
			if len(w.ClientConfig.CABundle) > 0 {
				consider("webhook "+w.Name, w.ClientConfig.CABundle)
			}
		}
	}
	if len(f.ServingCertificate) > 0 {
		consider("the server's serving certificate", f.ServingCertificate)
	}
	switch {
	case len(bad) > 0:
		return checkResult{"certificates", checkError, strings.Join(bad, "; ")}
	case soonest == nil:
		return checkResult{"certificates", checkWarning, "no CA bundle found on the APIServices or webhooks (insecureSkipTLSVerify?)"}
	}
	left := soonest.NotAfter.Sub(f.Now)
	msg := fmt.Sprintf("the first to expire is %s (%s), on %s", where, soonest.Subject.CommonName, soonest.NotAfter.UTC().Format(time.RFC3339))
	switch {
	case left <= 0:
		return checkResult{"certificates", checkError, "expired: " + msg}
	case left < certificateWarning:
		return checkResult{"certificates", checkWarning, fmt.Sprintf("expires in %d days: %s", int(left.Hours()/24), msg)}
	}
	return checkResult{"certificates", checkOK, fmt.Sprintf("%d days left: %s", int(left.Hours()/24), msg)}
}

// parseCertificates reads every certificate of a PEM bundle.
func parseCertificates(bundle []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, bundle = pem.Decode(bundle)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PEM certificate")
	}
	return out, nil
}
