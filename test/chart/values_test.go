package chart

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The objects whose pods the chart's values reach.
var (
	server       = Key{"Deployment", Namespace, "sidecarset-apiserver"}
	etcd         = Key{"StatefulSet", Namespace, "sidecarset-etcd"}
	backup       = Key{"CronJob", Namespace, "sidecarset-etcd-backup-00"}
	injector     = Key{"MutatingWebhookConfiguration", "", "sidecarset-injector"}
	guardBinding = Key{"ValidatingAdmissionPolicyBinding", "", "sidecarset-apiserver-webhook-guard"}
)

// podSpec returns the pod spec of a Deployment, StatefulSet or CronJob.
func podSpec(t *testing.T, o *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	path := []string{"spec", "template", "spec"}
	if o.GetKind() == "CronJob" {
		path = []string{"spec", "jobTemplate", "spec", "template", "spec"}
	}
	spec, found, err := unstructured.NestedMap(o.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s %s: no pod spec (%v)", o.GetKind(), o.GetName(), err)
	}
	return spec
}

// podMeta returns the pod template's metadata of a Deployment, StatefulSet or CronJob.
func podMeta(t *testing.T, o *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	path := []string{"spec", "template", "metadata"}
	if o.GetKind() == "CronJob" {
		path = []string{"spec", "jobTemplate", "spec", "template", "metadata"}
	}
	meta, _, err := unstructured.NestedMap(o.Object, path...)
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

func firstContainer(t *testing.T, o *unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	cs, _ := podSpec(t, o)["containers"].([]interface{})
	if len(cs) == 0 {
		t.Fatalf("%s %s: no containers", o.GetKind(), o.GetName())
	}
	return cs[0].(map[string]interface{})
}

func serverArgs(t *testing.T, objs map[Key]*unstructured.Unstructured) []string {
	t.Helper()
	var args []string
	for _, a := range firstContainer(t, get(t, objs, server))["args"].([]interface{}) {
		args = append(args, a.(string))
	}
	return args
}

// webhooks returns the template's webhooks by name.
func webhooks(t *testing.T, objs map[Key]*unstructured.Unstructured) map[string]map[string]interface{} {
	t.Helper()
	out := map[string]map[string]interface{}{}
	for _, w := range get(t, objs, injector).Object["webhooks"].([]interface{}) {
		w := w.(map[string]interface{})
		out[w["name"].(string)] = w
	}
	if len(out) != 2 {
		t.Fatalf("%d webhooks in the template, want 2", len(out))
	}
	return out
}

// excludedBy returns the namespaces a webhook's namespaceSelector leaves out by name (NotIn).
func excludedBy(w map[string]interface{}) []string {
	var out []string
	sel, _ := w["namespaceSelector"].(map[string]interface{})
	exprs, _ := sel["matchExpressions"].([]interface{})
	for _, e := range exprs {
		e := e.(map[string]interface{})
		if e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn" {
			for _, v := range e["values"].([]interface{}) {
				out = append(out, v.(string))
			}
		}
	}
	return out
}

func hasAll(have []string, want ...string) bool {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

// TestValuesReachEveryPlace: each value lands in every object that must carry it (the server's
// flags and the webhooks it compares with, every pod the chart runs, every volume of a Secret).
func TestValuesReachEveryPlace(t *testing.T) {
	e := setup(t)
	pods := []Key{server, etcd, backup}
	for _, tc := range []struct {
		name   string
		values []string
		check  func(t *testing.T, objs map[Key]*unstructured.Unstructured)
	}{
		{"excluded namespaces: the server's flag and every webhook's namespaceSelector",
			[]string{"injection.excludedNamespaces={team-a,team-b}"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				if !hasAll(serverArgs(t, objs), "--injection-excluded-namespaces=team-a,team-b") {
					t.Errorf("the server's args %v do not exclude team-a,team-b", serverArgs(t, objs))
				}
				for name, w := range webhooks(t, objs) {
					if !hasAll(excludedBy(w), "team-a", "team-b") {
						t.Errorf("webhook %s excludes %v, not team-a and team-b", name, excludedBy(w))
					}
				}
				if got := excludedBy(webhooks(t, objs)["sidecarinjection.admission.kruise.io"]); !hasAll(got, "kube-system", Namespace) {
					t.Errorf("the application webhook excludes %v, not kube-system and the server's namespace", got)
				}
			}},
		{"failure policies and timeouts: the template the server-write guard compares with",
			[]string{"webhook.failurePolicy=Ignore", "webhook.timeoutSeconds=7", "webhook.kubeSystem.failurePolicy=Fail", "webhook.kubeSystem.timeoutSeconds=3"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				ws := webhooks(t, objs)
				for name, want := range map[string][2]interface{}{
					"sidecarinjection.admission.kruise.io":        {"Ignore", int64(7)},
					"sidecarinjection-system.admission.kruise.io": {"Fail", int64(3)},
				} {
					got := [2]interface{}{ws[name]["failurePolicy"], ws[name]["timeoutSeconds"]}
					if f, ok := got[1].(float64); ok {
						got[1] = int64(f)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("webhook %s failurePolicy, timeoutSeconds (-want +got):\n%s", name, diff)
					}
				}
				// The guard's parameter is the template itself: what the server writes keeps these.
				expect(t, get(t, objs, guardBinding), injector.Name, "spec", "paramRef", "name")
			}},
		{"injection mode, log level and extra args: the server's flags",
			[]string{"injection.mode=webhook", "logLevel=4", "extraArgs={--kube-api-qps=50,--policy-grace=5s}"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				if args := serverArgs(t, objs); !hasAll(args, "--injection=webhook", "--v=4", "--kube-api-qps=50", "--policy-grace=5s") {
					t.Errorf("the server's args %v", args)
				}
			}},
		{"image registry, tag and digest; the tag defaults to the chart's appVersion",
			[]string{"image.registry=registry.example.com", "image.repository=sidecarset/apiserver", "etcd.image.digest=sha256:" + strings.Repeat("ab", 32)},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				if got := firstContainer(t, get(t, objs, server))["image"]; got != "registry.example.com/sidecarset/apiserver:"+appVersion(t, e) {
					t.Errorf("the server's image is %v", got)
				}
				for _, k := range []Key{etcd, backup} {
					if got := firstContainer(t, get(t, objs, k))["image"]; got != "registry.k8s.io/etcd@sha256:"+strings.Repeat("ab", 32) {
						t.Errorf("%s: image %v", k, got)
					}
				}
			}},
		{"image pull secrets and scheduling: every pod",
			[]string{"imagePullSecrets={regcred}", "nodeSelector.pool=system", "etcd.nodeSelector.pool=system", "etcd.backup.nodeSelector.pool=system",
				"tolerations[0].key=dedicated", "tolerations[0].operator=Exists", "etcd.tolerations[0].key=dedicated", "etcd.tolerations[0].operator=Exists",
				"etcd.backup.tolerations[0].key=dedicated", "etcd.backup.tolerations[0].operator=Exists",
				"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=zone", "topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
				"etcd.topologySpreadConstraints[0].maxSkew=1", "etcd.topologySpreadConstraints[0].topologyKey=zone", "etcd.topologySpreadConstraints[0].whenUnsatisfiable=DoNotSchedule",
				"etcd.backup.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
				"etcd.backup.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for _, k := range pods {
					spec := podSpec(t, get(t, objs, k))
					if diff := cmp.Diff([]interface{}{map[string]interface{}{"name": "regcred"}}, spec["imagePullSecrets"]); diff != "" {
						t.Errorf("%s: imagePullSecrets (-want +got):\n%s", k, diff)
					}
					if diff := cmp.Diff(map[string]interface{}{"pool": "system"}, spec["nodeSelector"]); diff != "" {
						t.Errorf("%s: nodeSelector (-want +got):\n%s", k, diff)
					}
					if diff := cmp.Diff([]interface{}{map[string]interface{}{"key": "dedicated", "operator": "Exists"}}, spec["tolerations"]); diff != "" {
						t.Errorf("%s: tolerations (-want +got):\n%s", k, diff)
					}
					if _, ok := spec["affinity"]; !ok {
						t.Errorf("%s: no affinity", k)
					}
				}
				for _, k := range []Key{server, etcd} {
					if _, ok := podSpec(t, get(t, objs, k))["topologySpreadConstraints"]; !ok {
						t.Errorf("%s: no topologySpreadConstraints", k)
					}
				}
			}},
		{"affinity: the default spreads the server and etcd; one given replaces it",
			[]string{"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
				"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				affinity, _ := podSpec(t, get(t, objs, server))["affinity"].(map[string]interface{})
				if _, ok := affinity["nodeAffinity"]; !ok || affinity["podAntiAffinity"] != nil {
					t.Errorf("the server's affinity %v is not the one given alone", affinity)
				}
				affinity, _ = podSpec(t, get(t, objs, etcd))["affinity"].(map[string]interface{})
				terms, _, _ := unstructured.NestedSlice(affinity, "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
				if len(terms) != 1 {
					t.Fatalf("etcd's default affinity %v", affinity)
				}
				expect(t, &unstructured.Unstructured{Object: terms[0].(map[string]interface{})}, "sidecarset-etcd",
					"podAffinityTerm", "labelSelector", "matchLabels", "app")
				if _, ok := podSpec(t, get(t, objs, backup))["affinity"]; ok {
					t.Error("the backup Jobs have an affinity none was given for")
				}
			}},
		{"pod labels and annotations, ServiceAccount annotations",
			[]string{"podLabels.team=platform", "podAnnotations.note=server", "etcd.podLabels.team=platform", "etcd.podAnnotations.note=etcd",
				"etcd.backup.podLabels.team=platform", "etcd.backup.podAnnotations.note=backup",
				"serviceAccount.annotations.iam\\.example\\.com/role=sidecarset"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for k, note := range map[Key]string{server: "server", etcd: "etcd", backup: "backup"} {
					o := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": podMeta(t, get(t, objs, k))}}
					if o.GetLabels()["team"] != "platform" || o.GetAnnotations()["note"] != note {
						t.Errorf("%s: pod labels %v, annotations %v", k, o.GetLabels(), o.GetAnnotations())
					}
				}
				expect(t, get(t, objs, Key{"ServiceAccount", Namespace, "sidecarset-apiserver"}), "sidecarset",
					"metadata", "annotations", "iam.example.com/role")
			}},
		{"certificates from existing Secrets: every volume and the ServiceMonitor",
			[]string{"certificates.source=existingSecrets", "certificates.existingSecrets.caBundle=-----BEGIN CERTIFICATE-----",
				"certificates.existingSecrets.etcdServer=es", "certificates.existingSecrets.etcdPeer=ep",
				"certificates.existingSecrets.etcdClient=ec", "certificates.existingSecrets.apiserver=as",
				"metrics.serviceMonitor.enabled=true"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for k, want := range map[Key][]string{server: {"as", "ec"}, etcd: {"es", "ep"}, backup: {"ec"}} {
					var got []string
					for _, v := range podSpec(t, get(t, objs, k))["volumes"].([]interface{}) {
						if s, ok := v.(map[string]interface{})["secret"].(map[string]interface{}); ok {
							got = append(got, s["secretName"].(string))
						}
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: Secret volumes (-want +got):\n%s", k, diff)
					}
				}
				for k := range objs {
					if k.Kind == "Secret" || k.Kind == "Certificate" {
						t.Errorf("%s rendered with existing Secrets", k)
					}
				}
				expect(t, get(t, objs, Key{"APIService", "", "v1.admission.kruise.io"}), "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t", "spec", "caBundle")
				endpoints, _, _ := unstructured.NestedSlice(get(t, objs, Key{"ServiceMonitor", Namespace, "sidecarset-apiserver"}).Object, "spec", "endpoints")
				expect(t, &unstructured.Unstructured{Object: endpoints[0].(map[string]interface{})}, "as", "tlsConfig", "ca", "secret", "name")
			}},
		{"namespaceOverride: every namespaced object and every reference to the namespace",
			[]string{"namespaceOverride=platform-sidecars"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for k := range objs {
					if k.Namespace != "" && k.Namespace != "platform-sidecars" && k.Namespace != "kube-system" {
						t.Errorf("%s is not in namespaceOverride", k)
					}
				}
				if got := excludedBy(webhooks(t, objs)["sidecarinjection.admission.kruise.io"]); !hasAll(got, "platform-sidecars") {
					t.Errorf("the application webhook excludes %v, not the server's namespace", got)
				}
				expect(t, get(t, objs, Key{"APIService", "", "v1beta1.apps.kruise.io"}), "platform-sidecars", "spec", "service", "namespace")
			}},
		{"keepOnUninstall: etcd's volumes, the backup claim and the namespace are kept",
			[]string{"createNamespace=true"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				expect(t, get(t, objs, etcd), "Retain", "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
				for _, k := range []Key{{"PersistentVolumeClaim", Namespace, "sidecarset-etcd-backup"}, {"Namespace", "", Namespace}} {
					expect(t, get(t, objs, k), "keep", "metadata", "annotations", "helm.sh/resource-policy")
				}
			}},
		{"keepOnUninstall=false: deleted with the release",
			[]string{"createNamespace=true", "keepOnUninstall=false"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				expect(t, get(t, objs, etcd), "Delete", "spec", "persistentVolumeClaimRetentionPolicy", "whenDeleted")
				for _, k := range []Key{{"PersistentVolumeClaim", Namespace, "sidecarset-etcd-backup"}, {"Namespace", "", Namespace}} {
					if _, found, _ := unstructured.NestedString(get(t, objs, k).Object, "metadata", "annotations", "helm.sh/resource-policy"); found {
						t.Errorf("%s keeps a resource policy", k)
					}
				}
			}},
		{"PriorityClass: none by default",
			nil,
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for _, k := range pods {
					if got, ok := podSpec(t, get(t, objs, k))["priorityClassName"]; ok {
						t.Errorf("%s: priorityClassName %v, want none", k, got)
					}
				}
			}},
		{"PriorityClass: an existing class",
			[]string{"priorityClass.name=system-cluster-critical"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for _, k := range []Key{server, etcd} {
					if got := podSpec(t, get(t, objs, k))["priorityClassName"]; got != "system-cluster-critical" {
						t.Errorf("%s: priorityClassName %v", k, got)
					}
				}
			}},
		{"PriorityClass: created under the chart's name, at the value given",
			[]string{"priorityClass.create=true", "priorityClass.value=100000"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for _, k := range []Key{server, etcd} {
					if got := podSpec(t, get(t, objs, k))["priorityClassName"]; got != "sidecarset-critical" {
						t.Errorf("%s: priorityClassName %v", k, got)
					}
				}
				class := get(t, objs, Key{"PriorityClass", "", "sidecarset-critical"})
				expect(t, class, int64(100000), "value")
				expect(t, class, false, "globalDefault")
			}},
		{"securePort: the server's flag, its container port, the Service's targetPort; the probes and the ServiceMonitor by the port's name",
			[]string{"securePort=9443", "metrics.serviceMonitor.enabled=true"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				if args := serverArgs(t, objs); !hasAll(args, "--secure-port=9443") || slices.Contains(args, "--secure-port=8443") {
					t.Errorf("the server's args %v", args)
				}
				c := firstContainer(t, get(t, objs, server))
				if diff := cmp.Diff([]interface{}{map[string]interface{}{"containerPort": int64(9443), "name": "https"}}, numbers(c["ports"])); diff != "" {
					t.Errorf("the server's container ports (-want +got):\n%s", diff)
				}
				for _, probe := range []string{"readinessProbe", "livenessProbe"} {
					expect(t, &unstructured.Unstructured{Object: c}, "https", probe, "httpGet", "port")
				}
				ports, _, _ := unstructured.NestedSlice(get(t, objs, Key{"Service", Namespace, "sidecarset-apiserver"}).Object, "spec", "ports")
				if diff := cmp.Diff([]interface{}{map[string]interface{}{"name": "https", "port": int64(443), "targetPort": int64(9443)}}, numbers(ports)); diff != "" {
					t.Errorf("the Service's ports (-want +got):\n%s", diff)
				}
				// The APIServices keep the Service's port.
				expect(t, get(t, objs, Key{"APIService", "", "v1beta1.apps.kruise.io"}), int64(443), "spec", "service", "port")
				endpoints, _, _ := unstructured.NestedSlice(get(t, objs, Key{"ServiceMonitor", Namespace, "sidecarset-apiserver"}).Object, "spec", "endpoints")
				expect(t, &unstructured.Unstructured{Object: endpoints[0].(map[string]interface{})}, "https", "port")
				spec := podSpec(t, get(t, objs, server))
				if _, ok := spec["hostNetwork"]; ok {
					t.Error("the server's pods are on the host network without hostNetwork")
				}
				if _, ok := spec["securityContext"].(map[string]interface{})["sysctls"]; ok {
					t.Error("a sysctl for a port from 1024 up")
				}
			}},
		{"values an older release lacks (an upgrade with --reuse-values keeps the old chart's defaults): 8443 and 1000000000",
			[]string{"securePort=null", "priorityClass.create=true", "priorityClass.value=null"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				if args := serverArgs(t, objs); !hasAll(args, "--secure-port=8443") {
					t.Errorf("the server's args %v", args)
				}
				expect(t, get(t, objs, Key{"PriorityClass", "", "sidecarset-critical"}), int64(1000000000), "value")
			}},
		{"securePort below 1024: the sysctl that lets the non-root server bind it, in the pod's own network",
			[]string{"securePort=443"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				if args := serverArgs(t, objs); !hasAll(args, "--secure-port=443") {
					t.Errorf("the server's args %v", args)
				}
				sc := podSpec(t, get(t, objs, server))["securityContext"].(map[string]interface{})
				want := []interface{}{map[string]interface{}{"name": "net.ipv4.ip_unprivileged_port_start", "value": "443"}}
				if diff := cmp.Diff(want, sc["sysctls"]); diff != "" {
					t.Errorf("the server's sysctls (-want +got):\n%s", diff)
				}
				if got := numbers(sc["runAsUser"]); got != int64(65532) {
					t.Errorf("runAsUser %v beside the sysctl, want 65532", got)
				}
			}},
		{"hostNetwork: the server's pods in the node's network with the cluster's DNS; etcd's client port open to node addresses",
			[]string{"hostNetwork=true", "securePort=9445"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				spec := podSpec(t, get(t, objs, server))
				if spec["hostNetwork"] != true || spec["dnsPolicy"] != "ClusterFirstWithHostNet" {
					t.Errorf("the server's pods: hostNetwork %v, dnsPolicy %v; want true, ClusterFirstWithHostNet", spec["hostNetwork"], spec["dnsPolicy"])
				}
				if args := serverArgs(t, objs); !hasAll(args, "--secure-port=9445") {
					t.Errorf("the server's args %v", args)
				}
				for _, k := range []Key{etcd, backup} {
					if _, ok := podSpec(t, get(t, objs, k))["hostNetwork"]; ok {
						t.Errorf("%s: on the host network", k)
					}
				}
				if got := clientPortRule(t, objs); got["from"] != nil {
					t.Errorf("etcd's NetworkPolicy admits the client port only from %v: not from the server's node addresses", got["from"])
				}
			}},
		{"hostNetwork off: etcd's client port only from the server, the backups and the members",
			nil,
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				var apps []string
				from, _ := clientPortRule(t, objs)["from"].([]interface{})
				for _, f := range from {
					app, _, _ := unstructured.NestedString(f.(map[string]interface{}), "podSelector", "matchLabels", "app")
					apps = append(apps, app)
				}
				if diff := cmp.Diff([]string{"sidecarset-apiserver", "sidecarset-etcd-backup", "sidecarset-etcd"}, apps); diff != "" {
					t.Errorf("etcd's client port admits (-want +got):\n%s", diff)
				}
				if _, ok := podSpec(t, get(t, objs, server))["hostNetwork"]; ok {
					t.Error("the server's pods are on the host network by default")
				}
			}},
		{"securityContexts: the chart's by default, on every pod and container",
			nil,
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				pod := map[string]interface{}{"runAsNonRoot": true, "runAsUser": int64(65532), "runAsGroup": int64(65532), "fsGroup": int64(65532),
					"seccompProfile": map[string]interface{}{"type": "RuntimeDefault"}}
				container := map[string]interface{}{"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
					"capabilities": map[string]interface{}{"drop": []interface{}{"ALL"}}}
				for _, k := range pods {
					if diff := cmp.Diff(pod, numbers(podSpec(t, get(t, objs, k))["securityContext"])); diff != "" {
						t.Errorf("%s: pod securityContext (-want +got):\n%s", k, diff)
					}
					if diff := cmp.Diff(container, numbers(firstContainer(t, get(t, objs, k))["securityContext"])); diff != "" {
						t.Errorf("%s: container securityContext (-want +got):\n%s", k, diff)
					}
				}
			}},
		{"securityContexts given replace the chart's whole: no uid where OpenShift assigns one",
			[]string{"podSecurityContext.runAsNonRoot=true", "podSecurityContext.seccompProfile.type=RuntimeDefault",
				"securityContext.allowPrivilegeEscalation=false", "securityContext.capabilities.drop={ALL}",
				"etcd.podSecurityContext.runAsNonRoot=true", "etcd.podSecurityContext.seccompProfile.type=RuntimeDefault",
				"etcd.securityContext.allowPrivilegeEscalation=false", "etcd.securityContext.capabilities.drop={ALL}"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				pod := map[string]interface{}{"runAsNonRoot": true, "seccompProfile": map[string]interface{}{"type": "RuntimeDefault"}}
				container := map[string]interface{}{"allowPrivilegeEscalation": false, "capabilities": map[string]interface{}{"drop": []interface{}{"ALL"}}}
				for _, k := range pods {
					if diff := cmp.Diff(pod, numbers(podSpec(t, get(t, objs, k))["securityContext"])); diff != "" {
						t.Errorf("%s: pod securityContext (-want +got):\n%s", k, diff)
					}
					if diff := cmp.Diff(container, numbers(firstContainer(t, get(t, objs, k))["securityContext"])); diff != "" {
						t.Errorf("%s: container securityContext (-want +got):\n%s", k, diff)
					}
				}
			}},
		{"extra env, volumes and mounts: the server's, after the chart's",
			[]string{"extraEnv[0].name=GOMEMLIMIT", "extraEnv[0].value=900MiB",
				"extraEnv[1].name=NODE", "extraEnv[1].valueFrom.fieldRef.fieldPath=spec.nodeName",
				"extraVolumes[0].name=corp-ca", "extraVolumes[0].configMap.name=corp-ca",
				"extraVolumeMounts[0].name=corp-ca", "extraVolumeMounts[0].mountPath=/etc/corp-ca", "extraVolumeMounts[0].readOnly=true"},
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				c := firstContainer(t, get(t, objs, server))
				env := c["env"].([]interface{})
				if diff := cmp.Diff([]interface{}{
					map[string]interface{}{"name": "GOMEMLIMIT", "value": "900MiB"},
					map[string]interface{}{"name": "NODE", "valueFrom": map[string]interface{}{"fieldRef": map[string]interface{}{"fieldPath": "spec.nodeName"}}},
				}, env[len(env)-2:]); diff != "" || env[0].(map[string]interface{})["name"] != "POD_NAMESPACE" {
					t.Errorf("the server's env %v: POD_NAMESPACE first, then the extra ones (-want +got):\n%s", env, diff)
				}
				mounts := c["volumeMounts"].([]interface{})
				if diff := cmp.Diff(map[string]interface{}{"name": "corp-ca", "mountPath": "/etc/corp-ca", "readOnly": true}, mounts[len(mounts)-1]); diff != "" || len(mounts) != 4 {
					t.Errorf("the server's volume mounts %v: the chart's 3, then the extra one (-want +got):\n%s", mounts, diff)
				}
				volumes := podSpec(t, get(t, objs, server))["volumes"].([]interface{})
				if diff := cmp.Diff(map[string]interface{}{"name": "corp-ca", "configMap": map[string]interface{}{"name": "corp-ca"}}, volumes[len(volumes)-1]); diff != "" || len(volumes) != 4 {
					t.Errorf("the server's volumes %v: the chart's 3, then the extra one (-want +got):\n%s", volumes, diff)
				}
				for _, k := range []Key{etcd, backup} {
					for _, e := range firstContainer(t, get(t, objs, k))["env"].([]interface{}) {
						if e.(map[string]interface{})["name"] == "GOMEMLIMIT" {
							t.Errorf("%s has the server's extra env", k)
						}
					}
				}
			}},
		{"recommended labels on every object",
			nil,
			func(t *testing.T, objs map[Key]*unstructured.Unstructured) {
				for k, o := range objs {
					l := o.GetLabels()
					for _, name := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
						"app.kubernetes.io/part-of", "app.kubernetes.io/managed-by", "helm.sh/chart"} {
						if l[name] == "" {
							t.Errorf("%s has no label %s", k, name)
						}
					}
				}
				for k, c := range map[Key]string{server: "apiserver", etcd: "etcd", backup: "backup"} {
					expect(t, get(t, objs, k), c, "metadata", "labels", "app.kubernetes.io/component")
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Certificates from existing Secrets unless the case chooses its own.
			base := existingSecrets
			if strings.Contains(strings.Join(tc.values, " "), "certificates.source=") {
				base = nil
			}
			tc.check(t, e.template(t, with(base, tc.values...)...))
		})
	}
}

// clientPortRule returns the ingress rule of etcd's NetworkPolicy for the client port 2379.
func clientPortRule(t *testing.T, objs map[Key]*unstructured.Unstructured) map[string]interface{} {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(get(t, objs, Key{"NetworkPolicy", Namespace, "sidecarset-etcd"}).Object, "spec", "ingress")
	for _, r := range rules {
		r := r.(map[string]interface{})
		ports, _ := r["ports"].([]interface{})
		if len(ports) == 1 && numbers(ports[0].(map[string]interface{})["port"]) == int64(2379) {
			return r
		}
	}
	t.Fatalf("etcd's NetworkPolicy has no rule for the client port alone: %v", rules)
	return nil
}

// numbers returns v with every float64 (as sigs.k8s.io/yaml decodes numbers) an int64 when whole,
// so that cmp.Diff compares it with integer literals.
func numbers(v interface{}) interface{} {
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
		return v
	case int:
		return int64(v)
	case map[string]interface{}:
		out := make(map[string]interface{}, len(v))
		for k, x := range v {
			out[k] = numbers(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(v))
		for i, x := range v {
			out[i] = numbers(x)
		}
		return out
	}
	return v
}

func appVersion(t *testing.T, e env) string {
	t.Helper()
	out, err := exec.Command(e.helm, "show", "chart", filepath.Join(e.root, Dir)).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion: "); ok {
			if v == "" || v == "latest" {
				t.Fatalf("Chart.yaml's appVersion is %q, not a release", v)
			}
			return v
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}

// TestSchemaRefusesTypos: values.schema.json refuses an unknown key at each level and a value
// outside an enum, in helm lint --strict as in helm template (and so install and upgrade).
func TestSchemaRefusesTypos(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		name, value, want string
	}{
		{"unknown top-level key", "replica=3", "additional properties 'replica' not allowed"},
		{"unknown nested key", "webhook.failurPolicy=Ignore", "additional properties 'failurPolicy' not allowed"},
		{"unknown etcd key", "etcd.persistance.size=1Gi", "additional properties 'persistance' not allowed"},
		{"injection mode", "injection.mode=policies", "/injection/mode"},
		{"failure policy", "webhook.failurePolicy=fail", "/webhook/failurePolicy"},
		{"kube-system failure policy", "webhook.kubeSystem.failurePolicy=Never", "/webhook/kubeSystem/failurePolicy"},
		{"log level", "logLevel=11", "/logLevel"},
		{"excluded namespace", "injection.excludedNamespaces={Team_A}", "/injection/excludedNamespaces/0"},
		{"image digest", "image.digest=latest", "/image/digest"},
		{"extra arg without --", "extraArgs={v=4}", "/extraArgs/0"},
		{"extra env without a name", "extraEnv[0].value=x", "/extraEnv/0"},
		{"extra volume mount without a path", "extraVolumeMounts[0].name=x", "/extraVolumeMounts/0"},
		{"extra volume named out of DNS labels", "extraVolumes[0].name=Corp_CA", "/extraVolumes/0/name"},
		{"secure port zero", "securePort=0", "/securePort"},
		{"host network not a boolean", "hostNetwork=yes", "/hostNetwork"},
		{"unknown etcd securityContext key", "etcd.securityContexts.runAsUser=1", "additional properties 'securityContexts' not allowed"},
		{"PriorityClass name not a DNS name", "priorityClass.name=Critical_1", "/priorityClass/name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := with(existingSecrets, tc.value)
			lint := exec.Command(e.helm, append([]string{"lint", "--strict", filepath.Join(e.root, Dir)}, args...)...)
			if out, err := lint.CombinedOutput(); err == nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("helm lint --strict --set %s: %v, output does not say %q:\n%s", tc.value, err, tc.want, out)
			}
			if out, err := Template(e.helm, e.root, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template --set %s: %v, does not say %q:\n%s", tc.value, err, tc.want, out)
			}
		})
	}
}

// TestChartServerGuardValues: rbac.evictions adds or leaves out pods/eviction in the server's
// ClusterRole; the pod guard selects the server's ServiceAccount in the release's namespace and
// allows the annotation keys of serverGuard.podAnnotationKeyExprs besides the kruise.io domain.
func TestChartServerGuardValues(t *testing.T) {
	e := setup(t)
	evicts := func(objs map[Key]*unstructured.Unstructured) bool {
		rules, _, _ := unstructured.NestedSlice(get(t, objs, Key{"ClusterRole", "", "sidecarset-apiserver"}).Object, "rules")
		for _, r := range rules {
			res, _, _ := unstructured.NestedStringSlice(r.(map[string]interface{}), "resources")
			if slices.Contains(res, "pods/eviction") {
				return true
			}
		}
		return false
	}
	args := CertFlags(e.certs)
	if objs := e.template(t, args...); !evicts(objs) {
		t.Error("by default the server's ClusterRole does not grant pods/eviction")
	}
	objs := e.template(t, with(args, "rbac.evictions=false", `serverGuard.podAnnotationKeyExprs={^acc[.]example[.]com/}`)...)
	if evicts(objs) {
		t.Error("with rbac.evictions=false the server's ClusterRole still grants pods/eviction")
	}
	guard := get(t, objs, Key{"ValidatingAdmissionPolicy", "", "sidecarset-apiserver-pod-guard"})
	conds, _, _ := unstructured.NestedSlice(guard.Object, "spec", "matchConditions")
	want := `request.userInfo.username == "system:serviceaccount:` + Namespace + `:sidecarset-apiserver"`
	if len(conds) != 1 || conds[0].(map[string]interface{})["expression"] != want {
		t.Errorf("the pod guard's match conditions %v, want only %s", conds, want)
	}
	vars, _, _ := unstructured.NestedSlice(guard.Object, "spec", "variables")
	allows := map[string]bool{} // the variables of the keys set and removed: both leave the listed keys out
	for _, v := range vars {
		m := v.(map[string]interface{})
		if name := m["name"].(string); name == "foreignSet" || name == "foreignRemoved" {
			allows[name] = strings.Contains(m["expression"].(string), `!k.matches("^acc[.]example[.]com/")`)
		}
	}
	if !allows["foreignSet"] || !allows["foreignRemoved"] {
		t.Errorf("the pod guard's foreignSet and foreignRemoved do not both allow serverGuard.podAnnotationKeyExprs (%v): %v", allows, vars)
	}
}
