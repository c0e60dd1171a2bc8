package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// The monitoring objects of templates/monitoring.yaml, all off by default.
var (
	readerRole        = Key{"ClusterRole", "", "sidecarset-apiserver-metrics-reader"}
	readerBinding     = Key{"ClusterRoleBinding", "", "sidecarset-apiserver-metrics-reader"}
	serverMonitor     = Key{"ServiceMonitor", Namespace, "sidecarset-apiserver"}
	etcdMonitor       = Key{"ServiceMonitor", Namespace, "sidecarset-etcd"}
	alertRule         = Key{"PrometheusRule", Namespace, "sidecarset-apiserver"}
	dashboardConfig   = Key{"ConfigMap", "grafana", "sidecarset-apiserver-dashboard"}
	monitoringObjects = []Key{readerRole, readerBinding, serverMonitor, etcdMonitor, alertRule, dashboardConfig}
)

// TestChartMonitoring: with the monitoring values on, the chart renders the metrics reader's
// ClusterRole and its binding, ServiceMonitors that select the server's and etcd's Services by
// their labels on ports those Services name (the server's over HTTPS, verified against the CA of
// its serving Secret), the PrometheusRule with monitoring/alerts.yaml's groups, the runbook
// base URL given and the injection webhooks' timeouts in the webhook latency alert, and the dashboard's ConfigMap with the JSON file and Grafana's sidecar label.
// With the defaults it renders none of them; the ServiceMonitors alone bring the ClusterRole.
func TestChartMonitoring(t *testing.T) {
	e := setup(t)
	for _, k := range monitoringObjects {
		if _, ok := e.template(t, CertFlags(e.certs)...)[k]; ok {
			t.Errorf("%s rendered with the default values", k)
		}
	}
	objs := e.template(t, append(CertFlags(e.certs),
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.interval=15s",
		"--set", "metrics.serviceMonitor.labels.release=kube-prometheus-stack",
		"--set", "metrics.readerRole.subjects[0].kind=ServiceAccount", "--set", "metrics.readerRole.subjects[0].name=prometheus-k8s",
		"--set", "metrics.readerRole.subjects[0].namespace=monitoring",
		"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.labels.role=alert-rules",
		"--set", "metrics.prometheusRule.runbookBaseURL=https://docs.example.com/sidecarset/runbook/",
		"--set", "webhook.timeoutSeconds=20", "--set", "webhook.kubeSystem.timeoutSeconds=8",
		"--set", "metrics.dashboard.enabled=true", "--set", "metrics.dashboard.namespace=grafana")...)

	role := get(t, objs, readerRole)
	if diff := cmp.Diff([]interface{}{map[string]interface{}{"nonResourceURLs": []interface{}{"/metrics"}, "verbs": []interface{}{"get"}}},
		role.Object["rules"]); diff != "" {
		t.Errorf("the reader's rules (-want +got):\n%s", diff)
	}
	binding := get(t, objs, readerBinding)
	expect(t, binding, "sidecarset-apiserver-metrics-reader", "roleRef", "name")
	if diff := cmp.Diff([]interface{}{map[string]interface{}{"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}},
		binding.Object["subjects"]); diff != "" {
		t.Errorf("the reader's subjects (-want +got):\n%s", diff)
	}

	sm := get(t, objs, serverMonitor)
	expect(t, sm, "kube-prometheus-stack", "metadata", "labels", "release")
	endpoint := checkMonitorSelects(t, objs, sm, Key{"Service", Namespace, "sidecarset-apiserver"})
	expect(t, endpoint, "https", "scheme")
	expect(t, endpoint, "15s", "interval")
	expect(t, endpoint, "/var/run/secrets/kubernetes.io/serviceaccount/token", "bearerTokenFile")
	expect(t, endpoint, "sidecarset-apiserver."+Namespace+".svc", "tlsConfig", "serverName")
	expect(t, endpoint, "sidecarset-apiserver-tls", "tlsConfig", "ca", "secret", "name")
	expect(t, endpoint, "ca.crt", "tlsConfig", "ca", "secret", "key")
	if _, ok, _ := unstructured.NestedString(get(t, objs, Key{"Secret", Namespace, "sidecarset-apiserver-tls"}).Object, "data", "ca.crt"); !ok {
		t.Error("the serving Secret has no ca.crt for the ServiceMonitor to verify the server with")
	}
	endpoint = checkMonitorSelects(t, objs, get(t, objs, etcdMonitor), Key{"Service", Namespace, "sidecarset-etcd"})
	expect(t, endpoint, "http", "scheme")

	rule := get(t, objs, alertRule)
	expect(t, rule, "alert-rules", "metadata", "labels", "role")
	checkRuleGroups(t, e.root, rule, strings.NewReplacer(shippedRunbook, "https://docs.example.com/sidecarset/runbook",
		"> 0.6 * 10 # webhook.timeoutSeconds\n", "> 0.6 * 20 # webhook.timeoutSeconds\n",
		"> 0.6 * 5 # webhook.kubeSystem.timeoutSeconds\n", "> 0.6 * 8 # webhook.kubeSystem.timeoutSeconds\n"))
	checkRuleGroups(t, e.root, get(t, e.template(t, append(CertFlags(e.certs), "--set", "metrics.prometheusRule.enabled=true")...), alertRule),
		strings.NewReplacer())

	cm := get(t, objs, dashboardConfig)
	expect(t, cm, "1", "metadata", "labels", "grafana_dashboard")
	dashboard, err := os.ReadFile(filepath.Join(e.root, Dir, "dashboards/sidecarset-apiserver.json"))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, cm, strings.TrimSuffix(string(dashboard), "\n"), "data", "sidecarset-apiserver.json")

	alone := e.template(t, append(CertFlags(e.certs), "--set", "metrics.serviceMonitor.enabled=true")...)
	get(t, alone, readerRole)
	if _, ok := alone[readerBinding]; ok {
		t.Error("a ClusterRoleBinding without subjects given")
	}
}

// checkMonitorSelects checks that the ServiceMonitor selects the Service (its namespace, its
// labels) on a port the Service names, and returns the ServiceMonitor's endpoint.
func checkMonitorSelects(t *testing.T, objs map[Key]*unstructured.Unstructured, sm *unstructured.Unstructured, service Key) *unstructured.Unstructured {
	t.Helper()
	svc := get(t, objs, service)
	names := stringsAt(t, sm, "spec", "namespaceSelector", "matchNames")
	if len(names) != 1 || names[0] != service.Namespace {
		t.Errorf("ServiceMonitor %s: namespaces %v, want %s", sm.GetName(), names, service.Namespace)
	}
	match, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(match) == 0 || !labels.SelectorFromSet(match).Matches(labels.Set(svc.GetLabels())) {
		t.Errorf("ServiceMonitor %s: selector %v does not select %s (labels %v)", sm.GetName(), match, service, svc.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor %s: %d endpoints, want 1", sm.GetName(), len(endpoints))
	}
	endpoint := &unstructured.Unstructured{Object: endpoints[0].(map[string]interface{})}
	port, _, _ := unstructured.NestedString(endpoint.Object, "port")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	found := false
	for _, p := range ports {
		found = found || p.(map[string]interface{})["name"] == port
	}
	if !found {
		t.Errorf("ServiceMonitor %s: port %q is not a port of %s (%v)", sm.GetName(), port, service, ports)
	}
	expect(t, endpoint, "/metrics", "path")
	return endpoint
}

// shippedRunbook is the runbook's base URL in monitoring/alerts.yaml.
const shippedRunbook = "https://github.com/sidecarset/apiserver/blob/main/docs/runbook.md"

// checkRuleGroups checks that the PrometheusRule holds monitoring/alerts.yaml's groups with the
// replacements of r made (the runbook's base URL, the webhooks' timeouts), and that each of r's
// strings is in the file.
func checkRuleGroups(t *testing.T, root string, rule *unstructured.Unstructured, r *strings.Replacer) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, Dir, "monitoring/alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{shippedRunbook + "#", "> 0.6 * 10 # webhook.timeoutSeconds\n", "> 0.6 * 5 # webhook.kubeSystem.timeoutSeconds\n"} {
		if !strings.Contains(string(data), s) {
			t.Fatalf("monitoring/alerts.yaml has no %q", s)
		}
	}
	var want map[string]interface{}
	if err := yaml.Unmarshal([]byte(r.Replace(string(data))), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, rule.Object["spec"]); diff != "" {
		t.Errorf("PrometheusRule spec (-want +got):\n%s", diff)
	}
}
