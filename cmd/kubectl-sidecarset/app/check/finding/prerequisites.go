package finding

import (
	"fmt"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/util/cert"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// The pre-install checks of what an installation needs from the cluster and from the user who
// installs it (category prerequisites), and the version skew between this plugin and the server:
// pure functions of Facts, as those of finding.go; the check command gathers them (check_prerequisites.go).

// categoryPrerequisites is the category of the pre-install checks of the cluster's and the
// installer's readiness for the chart.
const categoryPrerequisites = "prerequisites"

// The values of --certificates, as the chart's certificates.source.
const (
	CertificatesSelfManaged     = "self-managed"
	CertificatesSecrets         = "secrets"
	CertificatesCertManager     = "cert-manager"
	CertificatesExistingSecrets = "existingSecrets"
)

// CertificateSources are the values --certificates accepts.
var CertificateSources = []string{CertificatesSelfManaged, CertificatesSecrets, CertificatesCertManager, CertificatesExistingSecrets}

// CertManagerGroupVersion and certManagerResources are what the chart's cert-manager mode
// creates: Issuers and Certificates of cert-manager.io/v1.
const CertManagerGroupVersion = "cert-manager.io/v1"

var certManagerResources = []string{"certificates", "issuers"}

// frontProxyConfigMap is where kube-apiserver publishes the aggregation layer's front-proxy CA
// (requestheader-client-ca-file), which an aggregated server reads to authenticate the requests
// kube-apiserver proxies to it.
const (
	FrontProxyNamespace = "kube-system"
	FrontProxyName      = "extension-apiserver-authentication"
	frontProxyCAKey     = "requestheader-client-ca-file"
)

// The annotations that mark a StorageClass the default (the beta one is still honoured).
const (
	defaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	defaultStorageClassBetaAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// Permission is an action the installation performs: verb on resource of group, in namespace
// ("" for a cluster-scoped resource).
type Permission struct {
	Verb, Group, Resource, Namespace string
}

// String is the permission in words: "VERB RESOURCE[.GROUP][ in NAMESPACE]".
func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Namespace != "" {
		return p.Verb + " " + r + " in " + p.Namespace
	}
	return p.Verb + " " + r
}

// AccessReview is kube-apiserver's answer to a SelfSubjectAccessReview of a permission.
type AccessReview struct {
	Permission Permission
	Allowed    bool
	// Reason is the authorizer's reason, when it gives one.
	Reason string
}

// InstallTargets is what the installation will create, as the user describes it to check.
type InstallTargets struct {
	// Namespace is the server's namespace; NamespaceExists whether it exists already (the chart
	// or helm --create-namespace creates it otherwise).
	Namespace       string
	NamespaceExists bool
	// Certificates is the chart's certificates.source.
	Certificates string
	// PriorityClass is whether the chart creates its PriorityClass (priorityClass.create).
	PriorityClass bool
}

// InstallerPermissions are the creates installing the chart makes with the targets t: the
// cluster-scoped objects, the objects in the server's namespace, and the RoleBinding in
// kube-system that lets the server read the front-proxy CA. Helm needs get, list, patch and
// delete on the same objects for upgrades and uninstalls; create is the one an install cannot do
// without.
func InstallerPermissions(t InstallTargets) []Permission {
	cluster := func(group, resource string) Permission { return Permission{"create", group, resource, ""} }
	in := func(group, resource string) Permission { return Permission{"create", group, resource, t.Namespace} }
	out := []Permission{
		cluster("apiregistration.k8s.io", "apiservices"),
		cluster("rbac.authorization.k8s.io", "clusterroles"),
		cluster("rbac.authorization.k8s.io", "clusterrolebindings"),
		cluster("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
		cluster("admissionregistration.k8s.io", "validatingadmissionpolicies"),
		cluster("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
	}
	if t.PriorityClass {
		out = append(out, cluster("scheduling.k8s.io", "priorityclasses"))
	}
	if !t.NamespaceExists {
		out = append(out, cluster("", "namespaces"))
	}
	out = append(out,
		in("apps", "deployments"), in("apps", "statefulsets"), in("", "services"), in("", "serviceaccounts"),
		in("", "persistentvolumeclaims"), in("batch", "cronjobs"), in("policy", "poddisruptionbudgets"),
		in("networking.k8s.io", "networkpolicies"), in("rbac.authorization.k8s.io", "roles"),
		in("rbac.authorization.k8s.io", "rolebindings"),
		Permission{"create", "rbac.authorization.k8s.io", "rolebindings", FrontProxyNamespace})
	switch t.Certificates {
	case CertificatesSecrets:
		out = append(out, in("", "secrets"))
	case CertificatesSelfManaged:
		// The Role sidecarset-certificates grants the server and etcd's pods creates of Secrets:
		// RBAC lets only who holds that permission grant it.
		out = append(out, in("", "secrets"))
	case CertificatesCertManager:
		out = append(out, in("cert-manager.io", "issuers"), in("cert-manager.io", "certificates"))
	}
	return out
}

// checkInstallerRBAC: every permission the installation needs is granted to the user running
// check (SelfSubjectAccessReviews).
func checkInstallerRBAC(f *Facts) Result {
	if f.InstallerAccess == nil {
		return result(v1alpha1.FindingInstallerRBAC, StatusSkipped, "the installer's permissions were not reviewed")
	}
	var denied []string
	for _, r := range f.InstallerAccess {
		if !r.Allowed {
			denied = append(denied, r.Permission.String())
		}
	}
	if len(denied) > 0 {
		return result(v1alpha1.FindingInstallerRBAC, StatusError, fmt.Sprintf("you may not %s: installing the chart (or applying artifacts/deploy) would fail part way, %d of %d creates denied",
			strings.Join(denied, ", "), len(denied), len(f.InstallerAccess)))
	}
	return result(v1alpha1.FindingInstallerRBAC, StatusOK, fmt.Sprintf("you may make all %d creates the installation makes (APIServices, ClusterRoles and bindings, webhook configuration, ValidatingAdmissionPolicies, objects in %s)",
		len(f.InstallerAccess), f.Install.Namespace))
}

// isDefaultStorageClass reports whether sc is marked the default.
func isDefaultStorageClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[defaultStorageClassAnnotation] == "true" || sc.Annotations[defaultStorageClassBetaAnnotation] == "true"
}

// checkStorageClass: etcd's claims (and the backup claim) get a volume: the StorageClass given
// with --etcd-storage-class exists, or, without it, the cluster has a default one; otherwise the
// claims stay Pending and etcd never starts.
func checkStorageClass(f *Facts) Result {
	var names, defaults []string
	for i := range f.StorageClasses {
		sc := &f.StorageClasses[i]
		names = append(names, sc.Name)
		if isDefaultStorageClass(sc) {
			defaults = append(defaults, sc.Name)
		}
	}
	if want := f.EtcdStorageClass; want != "" {
		if !slices.Contains(names, want) {
			return result(v1alpha1.FindingStorageClass, StatusError, fmt.Sprintf("StorageClass %q (--etcd-storage-class) does not exist (the cluster has: %s): etcd's claims would stay Pending",
				want, listOrNone(names)))
		}
		return result(v1alpha1.FindingStorageClass, StatusOK, fmt.Sprintf("StorageClass %q exists for etcd's claims", want))
	}
	switch len(defaults) {
	case 0:
		return result(v1alpha1.FindingStorageClass, StatusWarning, fmt.Sprintf("no default StorageClass (the cluster has: %s): etcd's claims stay Pending unless the install names a class (etcd.persistence.storageClassName)",
			listOrNone(names)))
	case 1:
		return result(v1alpha1.FindingStorageClass, StatusOK, fmt.Sprintf("the default StorageClass %q provisions etcd's claims", defaults[0]))
	}
	return result(v1alpha1.FindingStorageClass, StatusWarning, fmt.Sprintf("%d StorageClasses are marked default (%s): a claim without a class gets the newest of them",
		len(defaults), strings.Join(defaults, ", ")))
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// checkFrontProxyCA: kube-apiserver publishes the aggregation layer's front-proxy CA in
// kube-system/extension-apiserver-authentication; without it the server cannot authenticate the
// requests kube-apiserver proxies to it, and every request through its APIServices fails.
func checkFrontProxyCA(f *Facts) Result {
	where := FrontProxyNamespace + "/" + FrontProxyName
	if f.FrontProxy == nil {
		return result(v1alpha1.FindingFrontProxyCA, StatusError, "ConfigMap "+where+" does not exist: kube-apiserver runs without the aggregation layer's "+
			"--requestheader-client-ca-file, and no aggregated API server can authenticate the requests it proxies")
	}
	bundle := f.FrontProxy.Data[frontProxyCAKey]
	if bundle == "" {
		return result(v1alpha1.FindingFrontProxyCA, StatusError, "ConfigMap "+where+" has no "+frontProxyCAKey+": kube-apiserver runs without "+
			"--requestheader-client-ca-file, so the server cannot authenticate the requests the aggregation layer proxies to it")
	}
	certs, err := cert.ParseCertsPEM([]byte(bundle))
	if err != nil {
		return result(v1alpha1.FindingFrontProxyCA, StatusError, fmt.Sprintf("%s of ConfigMap %s: %v", frontProxyCAKey, where, err))
	}
	soonest := certs[0]
	for _, c := range certs[1:] {
		if c.NotAfter.Before(soonest.NotAfter) {
			soonest = c
		}
	}
	if !soonest.NotAfter.After(f.Now) {
		return result(v1alpha1.FindingFrontProxyCA, StatusError, fmt.Sprintf("the front-proxy CA %q of ConfigMap %s expired on %s", soonest.Subject.CommonName, where, soonest.NotAfter.UTC().Format("2006-01-02")))
	}
	msg := fmt.Sprintf("the aggregation layer's front-proxy CA is published (%s of ConfigMap %s, %q)", frontProxyCAKey, where, soonest.Subject.CommonName)
	if names := f.FrontProxy.Data["requestheader-allowed-names"]; names != "" && names != "[]" {
		msg += "; allowed client names " + names
	}
	return result(v1alpha1.FindingFrontProxyCA, StatusOK, msg)
}

// checkCertManager: with --certificates cert-manager, cert-manager's API serves the Issuers and
// Certificates the chart creates.
func checkCertManager(f *Facts) Result {
	if f.Install.Certificates != CertificatesCertManager {
		return result(v1alpha1.FindingCertManager, StatusOK, "not used: certificates from "+f.Install.Certificates+" (--certificates)")
	}
	if f.CertManagerResources == nil {
		return result(v1alpha1.FindingCertManager, StatusError, "the cluster serves no "+CertManagerGroupVersion+": install cert-manager before the chart with certificates.source=cert-manager")
	}
	var missing []string
	for _, r := range certManagerResources {
		if !slices.Contains(f.CertManagerResources, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return result(v1alpha1.FindingCertManager, StatusError, CertManagerGroupVersion+" does not serve "+strings.Join(missing, ", ")+": cert-manager's CRDs are missing or not yet established")
	}
	return result(v1alpha1.FindingCertManager, StatusOK, CertManagerGroupVersion+" serves "+strings.Join(certManagerResources, " and "))
}

// checkVersionSkew: the plugin's version against the one the server's leader recorded. The same
// version, or releases of the same minor version, are ok; anything else is a warning, as inject
// and explain run the plugin's copy of the injector (docs/compatibility.md).
func checkVersionSkew(f *Facts) Result {
	server := ""
	if f.Active != nil {
		server = f.Active.Annotations[apps.ServerVersionAnnotation]
	}
	switch {
	case server == "":
		return result(v1alpha1.FindingVersionSkew, StatusSkipped, "the server has recorded no version to compare with the plugin's "+f.PluginVersion)
	case server == f.PluginVersion:
		return result(v1alpha1.FindingVersionSkew, StatusOK, "the plugin and the server are both "+server)
	}
	p, perr := utilversion.ParseSemantic(f.PluginVersion)
	s, serr := utilversion.ParseSemantic(server)
	if perr == nil && serr == nil && p.PreRelease() == "" && s.PreRelease() == "" && p.Major() == s.Major() && p.Minor() == s.Minor() {
		return result(v1alpha1.FindingVersionSkew, StatusOK, fmt.Sprintf("plugin %s, server %s: patch releases of the same minor version", f.PluginVersion, server))
	}
	return result(v1alpha1.FindingVersionSkew, StatusWarning, fmt.Sprintf("plugin %s, server %s: inject and explain run the plugin's copy of the injector, "+
		"which may not inject as this server does", f.PluginVersion, server))
}
