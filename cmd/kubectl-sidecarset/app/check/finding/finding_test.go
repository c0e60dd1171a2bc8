package finding

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/sidecarset/apiserver/cmd/kubectl-sidecarset/app/apiservice"
	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

var checkNow = time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

func testCA(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: checkNow.Add(-time.Hour),
		NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func crd(kind, plural string, versions ...string) apiextensionsv1.CustomResourceDefinition {
	c := apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: plural + ".apps.kruise.io"}}
	c.Spec.Group, c.Spec.Names.Kind, c.Spec.Names.Plural = "apps.kruise.io", kind, plural
	for _, v := range versions {
		c.Spec.Versions = append(c.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true})
	}
	return c
}

// installedFacts is a healthy installation with a CA valid for a year.
func installedFacts(t *testing.T) *Facts {
	ca := testCA(t, checkNow.AddDate(1, 0, 0))
	policies := true
	f := &Facts{Now: checkNow, Objects: map[string]int{}, APIServices: map[string]*apiregistrationv1.APIService{}, Policies: 2,
		KubernetesVersion: "1.36.3", PolicyAPI: &policies, ServerService: "sidecarset-system/sidecarset-apiserver", StorageBytes: 100 << 20, EtcdQuota: 4 << 30,
		Health: &Health{Checks: map[string]bool{"ping": true, "etcd": true, "sidecarset-injection": true}}}
	for _, name := range apiservice.Names {
		f.APIServices[name] = &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   apiregistrationv1.APIServiceSpec{Service: &apiregistrationv1.ServiceReference{Namespace: "sidecarset-system", Name: "sidecarset-apiserver"}, CABundle: ca},
			Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue}}}}
	}
	f.Template = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-injector"}}
	f.Active = &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-injector-active",
		Labels:      map[string]string{apps.ManagedByLabel: apps.ManagedByValue},
		Annotations: map[string]string{apps.ServerVersionAnnotation: "v1.2.3"}},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "a", ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca}}}}
	f.SidecarSets = []v1alpha1.SidecarSet{sidecarSetInjected("a", "True", "Policy"), sidecarSetInjected("b", "True", "Webhook")}
	return f
}

func namespacedInjected(ns, name string, status metav1.ConditionStatus, reason string) v1alpha1.NamespacedSidecarSet {
	ss := sidecarSetInjected(name, status, reason)
	ss.Namespace = ns
	return v1alpha1.NamespacedSidecarSet{ObjectMeta: ss.ObjectMeta, Status: ss.Status}
}

func sidecarSetInjected(name string, status metav1.ConditionStatus, reason string) v1alpha1.SidecarSet {
	ss := v1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2}}
	ss.Status.Conditions = []metav1.Condition{{Type: v1alpha1.SidecarSetInjected, Status: status, Reason: reason, ObservedGeneration: 2}}
	return ss
}

// TestAssessCluster: each subject's verdict, before and after installation.
func TestAssessCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		facts  func(*testing.T) *Facts
		want   map[string]Status // the checks named, with their status
		inMsg  map[string]string // words a check's message must hold
		failed bool
	}{
		{"not installed, no OpenKruise", func(t *testing.T) *Facts {
			return withPrerequisites(t, &Facts{Now: checkNow})
		}, map[string]Status{v1alpha1.FindingOpenKruiseCRDs: StatusOK, v1alpha1.FindingServer: StatusSkipped}, nil, false},
		{"not installed beside OpenKruise's CloneSet", func(t *testing.T) *Facts {
			return withPrerequisites(t, &Facts{Now: checkNow, CRDs: []apiextensionsv1.CustomResourceDefinition{crd("CloneSet", "clonesets", "v1alpha1"), crd("SidecarSet", "sidecarsets", "v1alpha1", "v1beta1")},
				Objects: map[string]int{"clonesets.apps.kruise.io/v1alpha1": 3, "sidecarsets.apps.kruise.io/v1alpha1": 1, "sidecarsets.apps.kruise.io/v1beta1": 1}})
		}, map[string]Status{v1alpha1.FindingOpenKruiseCRDs: StatusError}, map[string]string{v1alpha1.FindingOpenKruiseCRDs: "would hide every kind of apps.kruise.io at those versions: apps.kruise.io/v1alpha1 CloneSet (clonesets.apps.kruise.io, 3 objects)"}, true},
		{"not installed, only OpenKruise's SidecarSet", func(t *testing.T) *Facts {
			return withPrerequisites(t, &Facts{Now: checkNow, CRDs: []apiextensionsv1.CustomResourceDefinition{crd("SidecarSet", "sidecarsets", "v1alpha1")},
				Objects: map[string]int{"sidecarsets.apps.kruise.io/v1alpha1": 1}})
		}, map[string]Status{v1alpha1.FindingOpenKruiseCRDs: StatusWarning}, map[string]string{v1alpha1.FindingOpenKruiseCRDs: "SidecarSet (sidecarsets.apps.kruise.io, 1 object)"}, false},
		{"a kind at another version is not hidden", func(t *testing.T) *Facts {
			return withPrerequisites(t, &Facts{Now: checkNow, CRDs: []apiextensionsv1.CustomResourceDefinition{crd("Future", "futures", "v2")}})
		}, map[string]Status{v1alpha1.FindingOpenKruiseCRDs: StatusOK}, nil, false},
		{"healthy", installedFacts, map[string]Status{v1alpha1.FindingOpenKruiseCRDs: StatusOK, v1alpha1.FindingAPIServices: StatusOK, v1alpha1.FindingStorage: StatusOK,
			v1alpha1.FindingWebhooks: StatusOK, v1alpha1.FindingVersion: StatusOK, v1alpha1.FindingInjection: StatusOK, v1alpha1.FindingOpenKruiseFeatures: StatusOK, v1alpha1.FindingCertificates: StatusOK},
			map[string]string{v1alpha1.FindingVersion: "v1.2.3", v1alpha1.FindingWebhooks: "2 MutatingAdmissionPolicies", v1alpha1.FindingCertificates: "365 days left"}, false},
		{"installed beside a CloneSet CRD", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.CRDs = []apiextensionsv1.CustomResourceDefinition{crd("CloneSet", "clonesets", "v1alpha1")}
			return f
		}, map[string]Status{v1alpha1.FindingOpenKruiseCRDs: StatusError}, map[string]string{v1alpha1.FindingOpenKruiseCRDs: "hides every kind"}, true},
		{"server not ready", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.APIServices["v1beta1.apps.kruise.io"].Status.Conditions[0] = apiregistrationv1.APIServiceCondition{Type: apiregistrationv1.Available,
				Status: apiregistrationv1.ConditionFalse, Reason: "MissingEndpoints", Message: "no endpoints"}
			delete(f.APIServices, "v1.admission.kruise.io")
			return f
		}, map[string]Status{v1alpha1.FindingAPIServices: StatusError}, map[string]string{v1alpha1.FindingAPIServices: "v1beta1.apps.kruise.io is not Available: MissingEndpoints: no endpoints; v1.admission.kruise.io is missing"}, true},
		{"etcd down", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.SidecarSets, f.SidecarSetsErr = nil, errors.New("the server is currently unable to handle the request")
			return f
		}, map[string]Status{v1alpha1.FindingStorage: StatusError}, nil, true},
		{"no active webhooks yet", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Active = nil
			return f
		}, map[string]Status{v1alpha1.FindingWebhooks: StatusError, v1alpha1.FindingVersion: StatusWarning}, nil, true},
		{"no policies served", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Policies = -1
			return f
		}, map[string]Status{v1alpha1.FindingWebhooks: StatusOK}, map[string]string{v1alpha1.FindingWebhooks: "serves no MutatingAdmissionPolicy"}, false},
		{"what survives an outage", installedFacts, map[string]Status{v1alpha1.FindingOutage: StatusOK}, map[string]string{
			v1alpha1.FindingOutage: "the 1 SidecarSets served by policies still inject; pods that one of the 1 served by the webhook selects are refused: b"}, false},
		{"a SidecarSet asking for a policy served by the webhook", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.SidecarSets[1].Annotations = map[string]string{"apps.kruise.io/injection-path": "Policy"}
			f.SidecarSets[1].Status.Conditions[0].Message = "Canary: canary SidecarSets and their bases choose between each other per pod"
			return f
		}, map[string]Status{v1alpha1.FindingOutage: StatusWarning}, map[string]string{
			v1alpha1.FindingOutage: "1 SidecarSets ask for a policy and are served by the webhook, so their pods are refused while the server is down: b: Canary: canary"}, false},
		{"no SidecarSet on the webhook", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.SidecarSets = f.SidecarSets[:1]
			return f
		}, map[string]Status{v1alpha1.FindingOutage: StatusOK}, map[string]string{v1alpha1.FindingOutage: "no pod create depends on the server"}, false},
		{"a paused and an unobserved SidecarSet", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.SidecarSets = append(f.SidecarSets, sidecarSetInjected("p", "False", apps.ReasonInjectionPaused))
			return f
		}, map[string]Status{v1alpha1.FindingInjection: StatusWarning}, map[string]string{v1alpha1.FindingInjection: "p (InjectionPaused)"}, false},
		{"an unobserved SidecarSet", func(t *testing.T) *Facts {
			f := installedFacts(t)
			ss := sidecarSetInjected("new", "True", "Policy")
			ss.Generation = 3
			f.SidecarSets = append(f.SidecarSets, ss)
			return f
		}, map[string]Status{v1alpha1.FindingInjection: StatusError}, map[string]string{v1alpha1.FindingInjection: "new: not yet observed"}, true},
		{"NamespacedSidecarSets that inject", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.NamespacedSidecarSets = []v1alpha1.NamespacedSidecarSet{namespacedInjected("shop", "agent", "True", "Webhook")}
			return f
		}, map[string]Status{v1alpha1.FindingStorage: StatusOK, v1alpha1.FindingInjection: StatusOK}, map[string]string{
			v1alpha1.FindingStorage: "2 SidecarSets and 1 NamespacedSidecarSets", v1alpha1.FindingInjection: "all 2 SidecarSets and 1 NamespacedSidecarSets inject new pods"}, false},
		{"a paused and a failing NamespacedSidecarSet", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.NamespacedSidecarSets = []v1alpha1.NamespacedSidecarSet{namespacedInjected("shop", "p", "False", apps.ReasonInjectionPaused),
				namespacedInjected("shop", "bad", "False", "PolicyFailed")}
			return f
		}, map[string]Status{v1alpha1.FindingInjection: StatusError}, map[string]string{v1alpha1.FindingInjection: "namespacedsidecarset shop/bad: PolicyFailed"}, true},
		{"a paused NamespacedSidecarSet", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.NamespacedSidecarSets = []v1alpha1.NamespacedSidecarSet{namespacedInjected("shop", "p", "False", apps.ReasonInjectionPaused)}
			return f
		}, map[string]Status{v1alpha1.FindingInjection: StatusWarning}, map[string]string{v1alpha1.FindingInjection: "2 of 2 SidecarSets and 1 NamespacedSidecarSets inject; not injecting on purpose: namespacedsidecarset shop/p (InjectionPaused)"}, false},
		{"NamespacedSidecarSets not readable", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.NamespacedSidecarSetsErr = errors.New("etcdserver: request timed out")
			return f
		}, map[string]Status{v1alpha1.FindingStorage: StatusError}, map[string]string{v1alpha1.FindingStorage: "listing NamespacedSidecarSets"}, true},
		{"a SidecarSet relying on OpenKruise's launch priority", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.SidecarSets[1].Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "log",
				Env: []corev1.EnvVar{{Name: "KRUISE_CONTAINER_PRIORITY", Value: "1"}}}}}
			return f
		}, map[string]Status{v1alpha1.FindingOpenKruiseFeatures: StatusWarning, v1alpha1.FindingInjection: StatusOK}, map[string]string{v1alpha1.FindingOpenKruiseFeatures: "1 of 2 SidecarSets rely on OpenKruise features " +
			"outside the SidecarSet API, which do not work on this server: b: container launch priority (spec.containers[log].env[KRUISE_CONTAINER_PRIORITY]). " +
			"OpenKruise's container launch priority: no container start order"}, false},
		{"a NamespacedSidecarSet relying on OpenKruise's Job sidecar terminator", func(t *testing.T) *Facts {
			f := installedFacts(t)
			job := namespacedInjected("shop", "job", "True", "Webhook")
			job.Spec.Containers = []v1alpha1.SidecarContainer{{Container: corev1.Container{Name: "proxy",
				Env: []corev1.EnvVar{{Name: "KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT", Value: "true"}}}}}
			job.Spec.PatchPodMetadata = []v1alpha1.SidecarSetPatchPodMetadata{{Annotations: map[string]string{"apps.kruise.io/container-launch-priority": "Ordered"}}}
			f.NamespacedSidecarSets = []v1alpha1.NamespacedSidecarSet{job}
			return f
		}, map[string]Status{v1alpha1.FindingOpenKruiseFeatures: StatusWarning}, map[string]string{v1alpha1.FindingOpenKruiseFeatures: "namespacedsidecarset shop/job: " +
			"Job sidecar terminator (spec.containers[proxy].env[KRUISE_TERMINATE_SIDECAR_WHEN_JOB_EXIT]), " +
			"container launch priority (spec.patchPodMetadata[0].annotations[apps.kruise.io/container-launch-priority]). " +
			"OpenKruise's container launch priority: no container start order is enforced here"}, false},
		{"a CA expiring in 10 days", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Active.Webhooks[0].ClientConfig.CABundle = testCA(t, checkNow.AddDate(0, 0, 10))
			return f
		}, map[string]Status{v1alpha1.FindingCertificates: StatusWarning}, map[string]string{v1alpha1.FindingCertificates: "expiring within 60 days: webhook a (test-ca) in 10 days"}, false},
		{"each certificate within 60 days, the etcd peer's from its Secret", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Certificates = []NamedPEM{{Name: "Secret sidecarset-etcd-peer", PEM: testCA(t, checkNow.AddDate(0, 0, 59))},
				{Name: "Secret sidecarset-apiserver-tls", PEM: testCA(t, checkNow.AddDate(0, 0, 61))},
				{Name: "Secret sidecarset-etcd-client", PEM: testCA(t, checkNow.AddDate(0, 0, 20))}}
			return f
		}, map[string]Status{v1alpha1.FindingCertificates: StatusWarning},
			map[string]string{v1alpha1.FindingCertificates: "expiring within 60 days: Secret sidecarset-etcd-client (test-ca) in 20 days; Secret sidecarset-etcd-peer (test-ca) in 59 days"}, false},
		{"a trust bundle counts by the CA that expires last", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Certificates = []NamedPEM{{Name: "Secret sidecarset-serving-ca ca.crt", Bundle: true,
				PEM: append(testCA(t, checkNow.AddDate(0, 0, 10)), testCA(t, checkNow.AddDate(0, 0, 300))...)}}
			return f
		}, map[string]Status{v1alpha1.FindingCertificates: StatusOK}, map[string]string{v1alpha1.FindingCertificates: "300 days left: the first to expire is Secret sidecarset-serving-ca ca.crt"}, false},
		{"an expired serving certificate", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Certificates = []NamedPEM{{Name: "Secret sidecarset-apiserver-tls", PEM: testCA(t, checkNow.Add(-time.Minute))}}
			return f
		}, map[string]Status{v1alpha1.FindingCertificates: StatusError}, map[string]string{v1alpha1.FindingCertificates: "expired: Secret sidecarset-apiserver-tls (test-ca) on"}, true},
		{"a broken CA bundle", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.APIServices["v1alpha1.apps.kruise.io"].Spec.CABundle = []byte("not PEM")
			return f
		}, map[string]Status{v1alpha1.FindingCertificates: StatusError}, map[string]string{v1alpha1.FindingCertificates: "APIService v1alpha1.apps.kruise.io: data does not contain any valid RSA or ECDSA certificates"}, true},
		{"Kubernetes 1.29", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.KubernetesVersion = "1.29.4"
			return f
		}, map[string]Status{v1alpha1.FindingKubernetesVersion: StatusError}, map[string]string{v1alpha1.FindingKubernetesVersion: "needs 1.30 or later"}, true},
		{"Kubernetes 1.33 without v1 policies", func(t *testing.T) *Facts {
			f := installedFacts(t)
			served := false
			f.KubernetesVersion, f.PolicyAPI = "1.33.1", &served
			return f
		}, map[string]Status{v1alpha1.FindingKubernetesVersion: StatusOK, v1alpha1.FindingPolicyAPI: StatusWarning}, map[string]string{v1alpha1.FindingKubernetesVersion: "webhook injection only"}, false},
		{"pre-install beside OpenKruise", func(t *testing.T) *Facts {
			return withPrerequisites(t, &Facts{Now: checkNow, Pre: true, KubernetesVersion: "1.36.0", OpenKruiseManager: &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "kruise-system", Name: "kruise-controller-manager"}},
				OpenKruiseWebhooks: []string{"mutatingwebhookconfiguration/kruise-mutating-webhook-configuration"}})
		}, map[string]Status{v1alpha1.FindingOpenKruiseWebhooks: StatusWarning, v1alpha1.FindingOpenKruiseManager: StatusWarning, v1alpha1.FindingServer: ""}, nil, false},
		{"OpenKruise's webhooks left behind", func(t *testing.T) *Facts {
			return withPrerequisites(t, &Facts{Now: checkNow, Pre: true, KubernetesVersion: "1.36.0",
				OpenKruiseWebhooks: []string{"mutatingwebhookconfiguration/kruise-mutating-webhook-configuration", "validatingwebhookconfiguration/kruise-validating-webhook-configuration"}})
		}, map[string]Status{v1alpha1.FindingOpenKruiseWebhooks: StatusError, v1alpha1.FindingOpenKruiseManager: StatusOK}, map[string]string{v1alpha1.FindingOpenKruiseWebhooks: "left behind"}, true},
		{"an APIService routed to another server", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.APIServices["v1beta1.apps.kruise.io"].Spec.Service.Namespace = "other"
			return f
		}, map[string]Status{v1alpha1.FindingAPIServiceConflicts: StatusError}, map[string]string{v1alpha1.FindingAPIServiceConflicts: "v1beta1.apps.kruise.io routes to service other/sidecarset-apiserver"}, true},
		{"forbidden reads are skipped", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Unread = map[string]Unread{v1alpha1.FindingAPIServices: {What: "apiservices", Err: "forbidden", Forbidden: true}, v1alpha1.FindingOpenKruiseCRDs: {What: "crds", Err: "forbidden", Forbidden: true}}
			return f
		}, map[string]Status{v1alpha1.FindingAPIServices: StatusSkipped, v1alpha1.FindingOpenKruiseCRDs: StatusSkipped}, map[string]string{v1alpha1.FindingAPIServices: "not allowed to read apiservices"}, false},
		{"a read that failed otherwise is an error", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Unread = map[string]Unread{v1alpha1.FindingWebhooks: {What: "mutatingwebhookconfigurations", Err: "timeout"}}
			return f
		}, map[string]Status{v1alpha1.FindingWebhooks: StatusError}, map[string]string{v1alpha1.FindingWebhooks: "could not read mutatingwebhookconfigurations: timeout"}, true},
		{"etcd down as the server sees it", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Health = &Health{Checks: map[string]bool{"ping": true, "etcd": false, "sidecarset-injection": true}, Failed: []string{"etcd failed: reason withheld"}}
			return f
		}, map[string]Status{v1alpha1.FindingEtcdHealth: StatusError, v1alpha1.FindingServerHealth: StatusOK}, map[string]string{v1alpha1.FindingEtcdHealth: "etcd"}, true},
		{"a failing server check", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.Health = &Health{Checks: map[string]bool{"etcd": true, "sidecarset-injection": false}, Failed: []string{"sidecarset-injection failed: reason withheld"}}
			return f
		}, map[string]Status{v1alpha1.FindingServerHealth: StatusError, v1alpha1.FindingEtcdHealth: StatusOK}, map[string]string{v1alpha1.FindingServerHealth: "sidecarset-injection failed"}, true},
		{"etcd near its quota", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.StorageBytes = 3500 << 20
			return f
		}, map[string]Status{v1alpha1.FindingEtcdQuota: StatusWarning}, map[string]string{v1alpha1.FindingEtcdQuota: "85% of the 4.0GiB quota"}, false},
		{"etcd over its quota", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.StorageBytes = 5 << 30
			return f
		}, map[string]Status{v1alpha1.FindingEtcdQuota: StatusError}, nil, true},
		{"metrics not readable", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.StorageBytes = -1
			return f
		}, map[string]Status{v1alpha1.FindingEtcdQuota: StatusSkipped}, nil, false},
		{"a stalled rollout, pods not injected, a webhook receiving every pod", func(t *testing.T) *Facts {
			f := installedFacts(t)
			cond := func(typ, reason, msg string) metav1.Condition {
				return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: 2}
			}
			f.SidecarSets[0].Status.Conditions = append(f.SidecarSets[0].Status.Conditions, cond("Stalled", "PodsFailed", "shop/web-0: ImagePullBackOff"))
			f.SidecarSets[1].Status.Conditions = append(f.SidecarSets[1].Status.Conditions, cond("PodsNotInjected", "PodsRunWithoutSidecars", "1 pod"),
				cond("WebhookReceivesEveryPod", "NoObjectSelector", "every pod"))
			return f
		}, map[string]Status{v1alpha1.FindingSidecarSetConditions: StatusError}, map[string]string{v1alpha1.FindingSidecarSetConditions: "a: rollout Stalled: shop/web-0: ImagePullBackOff; b: PodsNotInjected: 1 pod; b: WebhookReceivesEveryPod: every pod"}, true},
		{"pods not injected only", func(t *testing.T) *Facts {
			f := installedFacts(t)
			f.SidecarSets[1].Status.Conditions = append(f.SidecarSets[1].Status.Conditions,
				metav1.Condition{Type: "PodsNotInjected", Status: metav1.ConditionTrue, Reason: "PodsRunWithoutSidecars", Message: "1 pod"})
			return f
		}, map[string]Status{v1alpha1.FindingSidecarSetConditions: StatusWarning}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Assess(tc.facts(t))
			got := map[string]Result{}
			for _, c := range r.Checks {
				got[c.Name] = c
			}
			for name, status := range tc.want {
				if got[name].Status != status {
					t.Errorf("%s: %s (%s), want %s", name, got[name].Status, got[name].Message, status)
				}
			}
			for name, words := range tc.inMsg {
				if !strings.Contains(got[name].Message, words) {
					t.Errorf("%s: message %q lacks %q", name, got[name].Message, words)
				}
			}
			if r.failed() != tc.failed {
				t.Errorf("failed = %v, want %v; errors: %v", r.failed(), tc.failed, r.Problems())
			}
		})
	}
}
