package finding

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// withPrerequisites gives f a cluster ready for the install: every create allowed, a default
// StorageClass, the front-proxy CA published, certificates from Secrets.
func withPrerequisites(t *testing.T, f *Facts) *Facts {
	f.Install = InstallTargets{Namespace: "sidecarset-system", Certificates: CertificatesSecrets, PriorityClass: true}
	for _, p := range InstallerPermissions(f.Install) {
		f.InstallerAccess = append(f.InstallerAccess, AccessReview{Permission: p, Allowed: true})
	}
	f.StorageClasses = []storagev1.StorageClass{storageClass("standard", true)}
	f.FrontProxy = frontProxyConfigMap(string(testCA(t, checkNow.AddDate(1, 0, 0))))
	return f
}

func storageClass(name string, isDefault bool) storagev1.StorageClass {
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/disk"}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	return sc
}

func frontProxyConfigMap(ca string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "extension-apiserver-authentication"},
		Data: map[string]string{"client-ca-file": "x", "requestheader-client-ca-file": ca, "requestheader-allowed-names": `["front-proxy-client"]`}}
}

// TestInstallerPermissions: the creates the chart's install makes, for each certificate source,
// with and without the PriorityClass and an existing namespace (written from the chart's
// templates: helm template lists these kinds).
func TestInstallerPermissions(t *testing.T) {
	common := []string{
		"create apiservices.apiregistration.k8s.io", "create clusterroles.rbac.authorization.k8s.io",
		"create clusterrolebindings.rbac.authorization.k8s.io", "create mutatingwebhookconfigurations.admissionregistration.k8s.io",
		"create validatingadmissionpolicies.admissionregistration.k8s.io", "create validatingadmissionpolicybindings.admissionregistration.k8s.io",
	}
	namespaced := []string{
		"create deployments.apps in ns", "create statefulsets.apps in ns", "create services in ns", "create serviceaccounts in ns",
		"create persistentvolumeclaims in ns", "create cronjobs.batch in ns", "create poddisruptionbudgets.policy in ns",
		"create networkpolicies.networking.k8s.io in ns", "create roles.rbac.authorization.k8s.io in ns",
		"create rolebindings.rbac.authorization.k8s.io in ns", "create rolebindings.rbac.authorization.k8s.io in kube-system",
	}
	join := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		targets InstallTargets
		want    []string
	}{
		{"secrets, a PriorityClass, a new namespace", InstallTargets{Namespace: "ns", Certificates: CertificatesSecrets, PriorityClass: true},
			join(common, []string{"create priorityclasses.scheduling.k8s.io", "create namespaces"}, namespaced, []string{"create secrets in ns"})},
		{"cert-manager in an existing namespace", InstallTargets{Namespace: "ns", NamespaceExists: true, Certificates: CertificatesCertManager},
			join(common, namespaced, []string{"create issuers.cert-manager.io in ns", "create certificates.cert-manager.io in ns"})},
		{"self-managed (the default): the Role it grants creates Secrets", InstallTargets{Namespace: "ns", NamespaceExists: true, Certificates: CertificatesSelfManaged},
			join(common, namespaced, []string{"create secrets in ns"})},
		{"existing Secrets", InstallTargets{Namespace: "ns", NamespaceExists: true, Certificates: CertificatesExistingSecrets},
			join(common, namespaced)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range InstallerPermissions(tc.targets) {
				got = append(got, p.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("permissions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrerequisites: the verdict of each prerequisite from the facts.
func TestPrerequisites(t *testing.T) {
	expired := string(testCA(t, checkNow.AddDate(0, 0, -1)))
	for _, tc := range []struct {
		name   string
		check  func(*Facts) Result
		facts  func(*Facts)
		status Status
		msg    string // words the message holds
	}{
		{"rbac: every create allowed", checkInstallerRBAC, func(*Facts) {}, StatusOK, "all 20 creates"},
		{"rbac: some denied", checkInstallerRBAC, func(f *Facts) {
			f.InstallerAccess[0].Allowed = false
			f.InstallerAccess[len(f.InstallerAccess)-1].Allowed = false
		}, StatusError, "you may not create apiservices.apiregistration.k8s.io, create secrets in sidecarset-system: installing the chart (or applying artifacts/deploy) would fail part way, 2 of 20 creates denied"},
		{"rbac: not reviewed", checkInstallerRBAC, func(f *Facts) { f.InstallerAccess = nil }, StatusSkipped, "not reviewed"},
		{"storage: one default", checkStorageClass, func(*Facts) {}, StatusOK, `default StorageClass "standard"`},
		{"storage: none", checkStorageClass, func(f *Facts) { f.StorageClasses = nil }, StatusWarning,
			"no default StorageClass (the cluster has: none): etcd's claims stay Pending unless the install names a class (etcd.persistence.storageClassName)"},
		{"storage: no default", checkStorageClass, func(f *Facts) {
			f.StorageClasses = []storagev1.StorageClass{storageClass("fast", false), storageClass("slow", false)}
		}, StatusWarning, "no default StorageClass (the cluster has: fast, slow)"},
		{"storage: beta default annotation", checkStorageClass, func(f *Facts) {
			sc := storageClass("old", false)
			sc.Annotations = map[string]string{"storageclass.beta.kubernetes.io/is-default-class": "true"}
			f.StorageClasses = []storagev1.StorageClass{sc}
		}, StatusOK, `"old"`},
		{"storage: two defaults", checkStorageClass, func(f *Facts) {
			f.StorageClasses = append(f.StorageClasses, storageClass("premium", true))
		}, StatusWarning, "2 StorageClasses are marked default (standard, premium)"},
		{"storage: the given class exists", checkStorageClass, func(f *Facts) {
			f.StorageClasses, f.EtcdStorageClass = []storagev1.StorageClass{storageClass("fast", false)}, "fast"
		}, StatusOK, `StorageClass "fast" exists`},
		{"storage: the given class is missing", checkStorageClass, func(f *Facts) { f.EtcdStorageClass = "fast" }, StatusError,
			`StorageClass "fast" (--etcd-storage-class) does not exist (the cluster has: standard)`},
		{"front proxy: published", checkFrontProxyCA, func(*Facts) {}, StatusOK, `requestheader-client-ca-file of ConfigMap kube-system/extension-apiserver-authentication, "test-ca"`},
		{"front proxy: no ConfigMap", checkFrontProxyCA, func(f *Facts) { f.FrontProxy = nil }, StatusError, "does not exist"},
		{"front proxy: no CA", checkFrontProxyCA, func(f *Facts) { delete(f.FrontProxy.Data, "requestheader-client-ca-file") }, StatusError,
			"has no requestheader-client-ca-file"},
		{"front proxy: not PEM", checkFrontProxyCA, func(f *Facts) { f.FrontProxy.Data["requestheader-client-ca-file"] = "junk" }, StatusError,
			"requestheader-client-ca-file of ConfigMap kube-system/extension-apiserver-authentication:"},
		{"front proxy: expired", checkFrontProxyCA, func(f *Facts) { f.FrontProxy = frontProxyConfigMap(expired) }, StatusError, "expired on 2026-11-25"},
		{"cert-manager: not chosen", checkCertManager, func(*Facts) {}, StatusOK, "not used: certificates from secrets"},
		{"cert-manager: not served", checkCertManager, func(f *Facts) { f.Install.Certificates = CertificatesCertManager }, StatusError,
			"the cluster serves no cert-manager.io/v1"},
		{"cert-manager: issuers missing", checkCertManager, func(f *Facts) {
			f.Install.Certificates, f.CertManagerResources = CertificatesCertManager, []string{"certificates", "certificates/status"}
		}, StatusError, "does not serve issuers"},
		{"cert-manager: served", checkCertManager, func(f *Facts) {
			f.Install.Certificates, f.CertManagerResources = CertificatesCertManager, []string{"certificaterequests", "certificates", "clusterissuers", "issuers"}
		}, StatusOK, "serves certificates and issuers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withPrerequisites(t, &Facts{Now: checkNow})
			tc.facts(f)
			got := tc.check(f)
			if got.Status != tc.status || !strings.Contains(got.Message, tc.msg) {
				t.Errorf("%s: %s %q, want %s with %q", got.Name, got.Status, got.Message, tc.status, tc.msg)
			}
		})
	}
}

// TestVersionSkew: the plugin's version against the server's.
func TestVersionSkew(t *testing.T) {
	for _, tc := range []struct {
		plugin, server string // "" server: none recorded
		status         Status
		msg            string
	}{
		{"v1.2.3", "v1.2.3", StatusOK, "both v1.2.3"},
		{"v0.0.0-663a344-dirty", "v0.0.0-663a344-dirty", StatusOK, "both v0.0.0-663a344-dirty"},
		{"v1.2.3", "v1.2.5", StatusOK, "patch releases of the same minor version"},
		{"v1.2.3", "v1.3.0", StatusWarning, "plugin v1.2.3, server v1.3.0: inject and explain run the plugin's copy of the injector"},
		{"v2.0.0", "v1.9.0", StatusWarning, "plugin v2.0.0, server v1.9.0"},
		{"v1.2.3-rc.1", "v1.2.3", StatusWarning, "plugin v1.2.3-rc.1, server v1.2.3"},
		{"v0.0.0-31d2804", "v0.0.0-663a344-dirty", StatusWarning, "plugin v0.0.0-31d2804, server v0.0.0-663a344-dirty"},
		{"v1.2.3", "", StatusSkipped, "no version to compare with the plugin's v1.2.3"},
	} {
		f := &Facts{PluginVersion: tc.plugin}
		if tc.server != "" {
			f.Active = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
				Annotations: map[string]string{apps.ServerVersionAnnotation: tc.server}}}
		}
		got := checkVersionSkew(f)
		if got.Status != tc.status || !strings.Contains(got.Message, tc.msg) {
			t.Errorf("plugin %s, server %q: %s %q, want %s with %q", tc.plugin, tc.server, got.Status, got.Message, tc.status, tc.msg)
		}
	}
}

// TestAssessPrerequisites: the prerequisites are assessed with --pre and before the install, each
// in its category with its docs anchor and a hint when not ok; after the install, the version
// skew is, and they are not.
func TestAssessPrerequisites(t *testing.T) {
	names := func(r Report) map[string]Result {
		out := map[string]Result{}
		for _, c := range r.Checks {
			out[c.Name] = c
		}
		return out
	}
	f := withPrerequisites(t, &Facts{Now: checkNow, Pre: true, Unread: map[string]Unread{}})
	f.StorageClasses = nil
	got := names(Assess(f))
	for _, name := range []string{v1alpha1.FindingInstallerRBAC, v1alpha1.FindingStorageClass, v1alpha1.FindingFrontProxyCA, v1alpha1.FindingCertManager} {
		c, ok := got[name]
		if !ok {
			t.Errorf("--pre: no %s", name)
			continue
		}
		if c.Category != "prerequisites" || c.Docs != docsURL+"prerequisites" {
			t.Errorf("%s: category %q docs %q", name, c.Category, c.Docs)
		}
	}
	if c := got[v1alpha1.FindingStorageClass]; c.Status != StatusWarning || !strings.Contains(c.Hint, "etcd.persistence.storageClassName") {
		t.Errorf("storage-class: %s, hint %q", c.Status, c.Hint)
	}
	if _, ok := got[v1alpha1.FindingVersionSkew]; ok {
		t.Error("--pre assessed version-skew")
	}

	f.Unread[v1alpha1.FindingInstallerRBAC] = Unread{What: "selfsubjectaccessreviews.authorization.k8s.io", Err: "forbidden", Forbidden: true}
	if c := names(Assess(f))[v1alpha1.FindingInstallerRBAC]; c.Status != StatusSkipped {
		t.Errorf("installer-rbac with the reviews forbidden: %s %q", c.Status, c.Message)
	}

	installed := withPrerequisites(t, installedFacts(t))
	installed.PluginVersion = "v1.2.3"
	got = names(Assess(installed))
	if c := got[v1alpha1.FindingVersionSkew]; c.Status != StatusOK || c.Category != categoryServer {
		t.Errorf("version-skew after install: %+v", c)
	}
	for _, name := range []string{v1alpha1.FindingInstallerRBAC, v1alpha1.FindingStorageClass, v1alpha1.FindingFrontProxyCA, v1alpha1.FindingCertManager} {
		if _, ok := got[name]; ok {
			t.Errorf("after install: %s assessed", name)
		}
	}
}
