package chart

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// certificateSecrets are the Secrets the self-managed certificates keep.
var certificateSecrets = []string{"sidecarset-etcd-ca", "sidecarset-serving-ca", "sidecarset-etcd-server", "sidecarset-etcd-peer",
	"sidecarset-etcd-client", "sidecarset-apiserver-tls"}

// containersAt returns the containers (or init containers) of a pod template by name.
func containersAt(t *testing.T, o *unstructured.Unstructured, field string) map[string]map[string]interface{} {
	t.Helper()
	out := map[string]map[string]interface{}{}
	cs, _ := podSpec(t, o)[field].([]interface{})
	for _, c := range cs {
		c := c.(map[string]interface{})
		out[c["name"].(string)] = c
	}
	return out
}

func argsOf(c map[string]interface{}) []string {
	var out []string
	for _, a := range c["args"].([]interface{}) {
		out = append(out, a.(string))
	}
	return out
}

// volumeKinds returns each volume of a pod template with its source's kind (secret, emptyDir, ...).
func volumeKinds(t *testing.T, o *unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, v := range podSpec(t, o)["volumes"].([]interface{}) {
		v := v.(map[string]interface{})
		for k := range v {
			if k != "name" {
				out[v["name"].(string)] = k
			}
		}
	}
	return out
}

// mounts returns a container's volume mounts: name to readOnly.
func mounts(c map[string]interface{}) map[string]bool {
	out := map[string]bool{}
	for _, m := range c["volumeMounts"].([]interface{}) {
		m := m.(map[string]interface{})
		ro, _ := m["readOnly"].(bool)
		out[m["name"].(string)] = ro
	}
	return out
}

// TestSelfManagedCertificates: the default source renders no certificate: the server keeps them
// (its flags with certificates.selfManaged's lifetimes and interval, the files in memory volumes
// it writes), etcd's pods create and renew theirs (an init container, then a sidecar, with a
// token of their own ServiceAccount that the etcd container does not get), the RBAC to do so,
// and the guard that holds those writes to the certificates' Secrets and the APIServices' caBundle.
func TestSelfManagedCertificates(t *testing.T) {
	e := setup(t)
	objs := e.template(t, "--set", "etcd.replicas=5", "--set", "certificates.selfManaged.caDuration=9000h",
		"--set", "certificates.selfManaged.duration=2000h", "--set", "certificates.selfManaged.checkInterval=30s")
	for k := range objs {
		if k.Kind == "Secret" || k.Kind == "Certificate" || k.Kind == "Issuer" {
			t.Errorf("%s rendered with self-managed certificates", k)
		}
	}
	for _, name := range []string{"v1beta1.apps.kruise.io", "v1alpha1.apps.kruise.io", "v1.admission.kruise.io"} {
		as := get(t, objs, Key{"APIService", "", name})
		if _, found, _ := unstructured.NestedFieldNoCopy(as.Object, "spec", "caBundle"); found || len(as.GetAnnotations()) > 0 {
			t.Errorf("APIService %s: a caBundle or annotations %v (the server sets the caBundle)", name, as.GetAnnotations())
		}
	}

	// The server.
	args := serverArgs(t, objs)
	for _, want := range []string{"--self-managed-certificates", "--certificates-etcd-members=5", "--certificates-ca-lifetime=9000h",
		"--certificates-lifetime=2000h", "--certificates-check-interval=30s", "--serving-ca-file=/etc/sidecarset/serving/ca.crt",
		"--tls-cert-file=/etc/sidecarset/serving/tls.crt", "--etcd-certfile=/etc/sidecarset/etcd-client/tls.crt"} {
		if !slices.Contains(args, want) {
			t.Errorf("the server's args have no %s: %v", want, args)
		}
	}
	if diff := cmp.Diff(map[string]string{"serving": "emptyDir", "etcd-client": "emptyDir", "tmp": "emptyDir"}, volumeKinds(t, get(t, objs, server))); diff != "" {
		t.Errorf("the server's volumes (-want +got):\n%s", diff)
	}
	if got := mounts(firstContainer(t, get(t, objs, server))); got["serving"] || got["etcd-client"] {
		t.Errorf("the server mounts its certificate volumes read-only, it writes them: %v", got)
	}

	// etcd.
	st := get(t, objs, etcd)
	expect(t, st, "sidecarset-etcd", "spec", "template", "spec", "serviceAccountName")
	expect(t, st, false, "spec", "template", "spec", "automountServiceAccountToken")
	expect(t, st, "etcd", "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/default-container")
	inits := containersAt(t, st, "initContainers")
	if len(inits) != 2 {
		t.Fatalf("etcd's init containers: %v, want certificates and certificates-renewal", inits)
	}
	for name, c := range inits {
		a := argsOf(c)
		for _, want := range []string{"certificates", "ensure", "--namespace=$(POD_NAMESPACE)", "--etcd-members=5", "--ca-lifetime=9000h",
			"--lifetime=2000h", "--write=sidecarset-etcd-server=/etc/etcd/server", "--write=sidecarset-etcd-peer=/etc/etcd/peer"} {
			if !slices.Contains(a, want) {
				t.Errorf("etcd's %s: no %s in %v", name, want, a)
			}
		}
		if !strings.HasPrefix(c["image"].(string), "sidecarset-apiserver:") {
			t.Errorf("etcd's %s runs %s, not the server's image", name, c["image"])
		}
		if m := mounts(c); m["server-tls"] || m["peer-tls"] || !m["kube-api-access"] {
			t.Errorf("etcd's %s mounts %v: its certificate volumes writable, the token read-only", name, m)
		}
	}
	// The init container runs once (the last --check-interval wins), the sidecar keeps going.
	if a := argsOf(inits["certificates"]); a[len(a)-3] != "--check-interval=0" || inits["certificates"]["restartPolicy"] != nil {
		t.Errorf("etcd's init container certificates: %v, restartPolicy %v; want a single run", a, inits["certificates"]["restartPolicy"])
	}
	if a := argsOf(inits["certificates-renewal"]); !slices.Contains(a, "--check-interval=30s") || inits["certificates-renewal"]["restartPolicy"] != "Always" {
		t.Errorf("etcd's sidecar certificates-renewal: %v, restartPolicy %v; want a sidecar checking every 30s", a, inits["certificates-renewal"]["restartPolicy"])
	}
	if _, ok := mounts(containersAt(t, st, "containers")["etcd"])["kube-api-access"]; ok {
		t.Error("the etcd container mounts the ServiceAccount token")
	}
	want := map[string]string{"data": "", "server-tls": "emptyDir", "peer-tls": "emptyDir", "kube-api-access": "projected"}
	got := volumeKinds(t, st)
	got["data"] = "" // the claim template's
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("etcd's volumes (-want +got):\n%s", diff)
	}

	// RBAC and the guard.
	expect(t, get(t, objs, Key{"ServiceAccount", Namespace, "sidecarset-etcd"}), false, "automountServiceAccountToken")
	role := get(t, objs, Key{"Role", Namespace, "sidecarset-certificates"})
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	wantRules := []interface{}{
		map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"secrets"}, "verbs": []interface{}{"create"}},
		map[string]interface{}{"apiGroups": []interface{}{""}, "resources": []interface{}{"secrets"}, "resourceNames": toAny(certificateSecrets), "verbs": []interface{}{"get", "update"}},
	}
	if diff := cmp.Diff(wantRules, rules); diff != "" {
		t.Errorf("Role sidecarset-certificates (-want +got):\n%s", diff)
	}
	binding := get(t, objs, Key{"RoleBinding", Namespace, "sidecarset-certificates"})
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if len(subjects) != 2 || !strings.Contains(toString(subjects), "sidecarset-apiserver") || !strings.Contains(toString(subjects), "sidecarset-etcd") {
		t.Errorf("RoleBinding sidecarset-certificates binds %v", subjects)
	}
	cr := get(t, objs, Key{"ClusterRole", "", "sidecarset-apiserver"})
	crRules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	apiservicePatch := map[string]interface{}{"apiGroups": []interface{}{"apiregistration.k8s.io"}, "resources": []interface{}{"apiservices"},
		"resourceNames": []interface{}{"v1beta1.apps.kruise.io", "v1alpha1.apps.kruise.io", "v1.admission.kruise.io"}, "verbs": []interface{}{"get", "patch"}}
	if !slices.ContainsFunc(crRules, func(r interface{}) bool { return cmp.Equal(r, apiservicePatch) }) {
		t.Errorf("ClusterRole sidecarset-apiserver has no rule %v", apiservicePatch)
	}
	guard := get(t, objs, Key{"ValidatingAdmissionPolicy", "", "sidecarset-apiserver-certificate-guard"})
	if s := toString(guard.Object["spec"]); !strings.Contains(s, "system:serviceaccount:"+Namespace+":sidecarset-etcd") ||
		!strings.Contains(s, "sidecarset-apiserver-tls") {
		t.Errorf("the certificate guard does not name etcd's ServiceAccount and the Secrets: %s", s)
	}
	get(t, objs, Key{"ValidatingAdmissionPolicyBinding", "", "sidecarset-apiserver-certificate-guard"})
}

// TestOtherSourcesNoSelfManagement: with the other sources, nothing of the self-managed
// certificates is rendered.
func TestOtherSourcesNoSelfManagement(t *testing.T) {
	e := setup(t)
	for name, args := range map[string][]string{
		"secrets":         CertFlags(e.certs),
		"cert-manager":    {"--set", "certificates.source=cert-manager"},
		"existingSecrets": existingSecrets,
	} {
		t.Run(name, func(t *testing.T) {
			objs := e.template(t, args...)
			for _, k := range []Key{{"ServiceAccount", Namespace, "sidecarset-etcd"}, {"Role", Namespace, "sidecarset-certificates"},
				{"ValidatingAdmissionPolicy", "", "sidecarset-apiserver-certificate-guard"}} {
				if _, ok := objs[k]; ok {
					t.Errorf("%s rendered", k)
				}
			}
			if inits := containersAt(t, get(t, objs, etcd), "initContainers"); len(inits) > 0 {
				t.Errorf("etcd's init containers: %v", inits)
			}
			if slices.Contains(serverArgs(t, objs), "--self-managed-certificates") {
				t.Error("the server keeps the certificates")
			}
		})
	}
}

// TestCertManagerIssuers: certManager's issuerRef issues the serving certificate, etcdIssuerRef
// etcd's; the chart's own CA and self-signed root are rendered only for a leaf that has no issuer
// of its own; the leaves take duration and renewBefore.
func TestCertManagerIssuers(t *testing.T) {
	e := setup(t)
	cm := []string{"--set", "certificates.source=cert-manager", "--set", "certificates.certManager.duration=720h",
		"--set", "certificates.certManager.renewBefore=240h", "--set", "certificates.certManager.caDuration=43800h"}
	issuer := func(objs map[Key]*unstructured.Unstructured, name string) map[string]interface{} {
		ref, _, _ := unstructured.NestedMap(get(t, objs, Key{"Certificate", Namespace, name}).Object, "spec", "issuerRef")
		return ref
	}
	own := func(name string) map[string]interface{} {
		return map[string]interface{}{"kind": "Issuer", "name": name}
	}
	corp := map[string]interface{}{"kind": "ClusterIssuer", "name": "corp", "group": "cert-manager.io"}
	for _, tc := range []struct {
		name          string
		values        []string
		serving, etcd map[string]interface{}
		ownCAs        []string
	}{
		{"the chart's own CAs", nil, own("sidecarset-serving-ca"), own("sidecarset-etcd-ca"), []string{"sidecarset-etcd-ca", "sidecarset-serving-ca"}},
		{"a ClusterIssuer for the serving certificate", []string{"certificates.certManager.issuerRef.name=corp"},
			corp, own("sidecarset-etcd-ca"), []string{"sidecarset-etcd-ca"}},
		{"an Issuer of another group for both", []string{"certificates.certManager.issuerRef.name=vault", "certificates.certManager.issuerRef.kind=Issuer",
			"certificates.certManager.issuerRef.group=example.com", "certificates.certManager.etcdIssuerRef.name=vault",
			"certificates.certManager.etcdIssuerRef.kind=Issuer", "certificates.certManager.etcdIssuerRef.group=example.com"},
			map[string]interface{}{"kind": "Issuer", "name": "vault", "group": "example.com"},
			map[string]interface{}{"kind": "Issuer", "name": "vault", "group": "example.com"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := e.template(t, with(cm, tc.values...)...)
			if diff := cmp.Diff(tc.serving, issuer(objs, "sidecarset-apiserver-tls")); diff != "" {
				t.Errorf("the serving certificate's issuer (-want +got):\n%s", diff)
			}
			for _, name := range []string{"sidecarset-etcd-server", "sidecarset-etcd-peer", "sidecarset-etcd-client"} {
				if diff := cmp.Diff(tc.etcd, issuer(objs, name)); diff != "" {
					t.Errorf("%s's issuer (-want +got):\n%s", name, diff)
				}
				expect(t, get(t, objs, Key{"Certificate", Namespace, name}), "720h", "spec", "duration")
				expect(t, get(t, objs, Key{"Certificate", Namespace, name}), "240h", "spec", "renewBefore")
			}
			var cas []string
			for k, o := range objs {
				if k.Kind == "Certificate" {
					if isCA, _, _ := unstructured.NestedBool(o.Object, "spec", "isCA"); isCA {
						cas = append(cas, k.Name)
						expect(t, o, "43800h", "spec", "duration")
						if _, ok := objs[Key{"Issuer", Namespace, k.Name}]; !ok {
							t.Errorf("CA %s has no Issuer", k.Name)
						}
					}
				}
			}
			slices.Sort(cas)
			if diff := cmp.Diff(tc.ownCAs, cas); diff != "" {
				t.Errorf("the chart's own CAs (-want +got):\n%s", diff)
			}
			if _, ok := objs[Key{"Issuer", Namespace, "sidecarset-selfsigned"}]; ok != (len(tc.ownCAs) > 0) {
				t.Errorf("the self-signed Issuer rendered: %v, with own CAs %v", ok, tc.ownCAs)
			}
			expect(t, get(t, objs, Key{"APIService", "", "v1.admission.kruise.io"}), Namespace+"/sidecarset-apiserver-tls",
				"metadata", "annotations", "cert-manager.io/inject-ca-from")
		})
	}
}

func toAny(in []string) []interface{} {
	out := make([]interface{}, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}

func toString(v interface{}) string {
	b, _ := json.Marshal(v)
	return string(b)
}
