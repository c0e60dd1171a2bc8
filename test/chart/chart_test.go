package chart

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset/apiserver/test/deploycheck"
)

// env is what every test shares: the tools, and a copy of artifacts/deploy and
// artifacts/deploy-example (without an operator's certs/) with certificates of hack/deploy-certs.sh.
type env struct {
	root, helm, kubectl string
	dir                 string // the copy: dir/artifacts/deploy, dir/artifacts/deploy-example
	certs               string // dir/artifacts/deploy/certs
}

var (
	setupOnce sync.Once
	shared    env
	setupErr  error
	tmpDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if tmpDir != "" {
		_ = os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// setup builds helm (hack/install-helm.sh) and finds kubectl the first time; a missing tool is
// built, never a reason to skip.
func setup(t *testing.T) env {
	t.Helper()
	setupOnce.Do(func() {
		e := env{}
		if e.root, setupErr = Root(); setupErr != nil {
			return
		}
		if e.helm, setupErr = Helm(e.root); setupErr != nil {
			return
		}
		if e.kubectl, setupErr = Kubectl(e.root); setupErr != nil {
			return
		}
		if tmpDir, setupErr = os.MkdirTemp("", "chart-test-"); setupErr != nil {
			return
		}
		e.dir = tmpDir
		for _, d := range []string{"artifacts/deploy", "artifacts/deploy-example"} {
			if setupErr = CopyTree(filepath.Join(e.root, d), filepath.Join(e.dir, d), "certs"); setupErr != nil {
				return
			}
		}
		e.certs = filepath.Join(e.dir, "artifacts/deploy/certs")
		if setupErr = WriteCerts(e.root, e.certs, Namespace); setupErr != nil {
			return
		}
		shared = e
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func (e env) template(t *testing.T, args ...string) map[Key]*unstructured.Unstructured {
	t.Helper()
	out, err := Template(e.helm, e.root, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Parse(out)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return objs
}

func (e env) kustomize(t *testing.T, dir string) map[Key]*unstructured.Unstructured {
	t.Helper()
	out, err := Kustomize(e.kubectl, filepath.Join(e.dir, dir))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Parse(out)
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return objs
}

// existingSecrets are the values of certificates from existing Secrets (no certificate files).
var existingSecrets = []string{"--set", "certificates.source=existingSecrets", "--set", "certificates.existingSecrets.caBundle=Q0E="}

// TestHelmLint lints the chart (--strict, with its values.schema.json) with each certificate
// source (with secrets, the certificate files of hack/deploy-certs.sh; self-managed is the
// default).
func TestHelmLint(t *testing.T) {
	e := setup(t)
	for name, args := range map[string][]string{
		"self-managed":    nil,
		"secrets":         CertFlags(e.certs),
		"cert-manager":    {"--set", "certificates.source=cert-manager"},
		"existingSecrets": existingSecrets,
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(e.helm, append([]string{"lint", "--strict", filepath.Join(e.root, Dir)}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("helm lint: %v\n%s", err, out)
			}
		})
	}
}

// TestDeployRenderedFromChart: the kustomizations built on the rendered base (hack/render-deploy.sh
// writes it; make verify checks that it is current) hold exactly the objects the chart renders
// with the same choices: artifacts/deploy with certificates from files, overlays/cert-manager, and
// artifacts/deploy-example's namespace. None keeps the placeholder caBundle.
func TestDeployRenderedFromChart(t *testing.T) {
	e := setup(t)
	deploy := []string{"--namespace", DeployNamespace, "--set", "createNamespace=true"}
	for _, tc := range []struct {
		dir  string
		args []string
	}{
		{"artifacts/deploy", append(append([]string{}, deploy...), CertFlags(e.certs)...)},
		{"artifacts/deploy/overlays/cert-manager", append(append([]string{}, deploy...), "--set", "certificates.source=cert-manager")},
		{"artifacts/deploy-example", append([]string{"--namespace", "platform-sidecarset", "--set", "createNamespace=true"}, CertFlags(e.certs)...)},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			built := e.kustomize(t, tc.dir)
			if diff := cmp.Diff(keys(e.template(t, tc.args...)), keys(built)); diff != "" {
				t.Errorf("objects (-chart +kustomize):\n%s", diff)
			}
			for k, o := range built {
				if ca, _, _ := unstructured.NestedString(o.Object, "spec", "caBundle"); k.Kind == "APIService" && ca == "CA_BUNDLE" {
					t.Errorf("%s keeps the placeholder caBundle", k)
				}
			}
		})
	}
}

// TestChartRendersEveryObject: for each combination of values, the chart renders exactly the
// objects it must: each certificate source's Secrets, Issuers and Certificates, the Namespace only
// when asked, the server's PodDisruptionBudget only with more than one replica, the PriorityClass
// only when asked (none by default) and the PodDisruptionBudgets only when enabled, one CronJob
// per backup hour.
func TestChartRendersEveryObject(t *testing.T) {
	e := setup(t)
	common := join(
		namespaced("ServiceAccount", "sidecarset-apiserver"),
		cluster("ClusterRole", "sidecarset-apiserver", "sidecarsets-view", "sidecarsets-admin", "sidecarsets-rollout-operator",
			"namespacedsidecarsets-view", "namespacedsidecarsets-edit"),
		cluster("ClusterRoleBinding", "sidecarset-apiserver", "sidecarset-apiserver:system:auth-delegator"),
		[]Key{{"RoleBinding", "kube-system", "sidecarset-apiserver-auth-reader"}},
		namespaced("Role", "sidecarset-apiserver"), namespaced("RoleBinding", "sidecarset-apiserver"),
		namespaced("Service", "sidecarset-apiserver", "sidecarset-etcd"),
		namespaced("Deployment", "sidecarset-apiserver"), namespaced("StatefulSet", "sidecarset-etcd"),
		namespaced("PodDisruptionBudget", "sidecarset-apiserver", "sidecarset-etcd"),
		namespaced("NetworkPolicy", "sidecarset-etcd"), namespaced("PersistentVolumeClaim", "sidecarset-etcd-backup"),
		namespaced("CronJob", backupJobs...),
		cluster("APIService", "v1beta1.apps.kruise.io", "v1alpha1.apps.kruise.io", "v1.admission.kruise.io"),
		cluster("MutatingWebhookConfiguration", "sidecarset-injector"),
		cluster("ValidatingAdmissionPolicy", "sidecarset-apiserver-webhook-scope", "sidecarset-apiserver-webhook-guard", "sidecarset-apiserver-pod-guard"),
		cluster("ValidatingAdmissionPolicyBinding", "sidecarset-apiserver-webhook-scope", "sidecarset-apiserver-webhook-guard", "sidecarset-apiserver-pod-guard"),
	)
	for _, tc := range []struct {
		name          string
		args          []string
		add, leaveOut []Key
	}{
		{name: "certificates from files", args: CertFlags(e.certs),
			add: namespaced("Secret", "sidecarset-etcd-server", "sidecarset-etcd-peer", "sidecarset-etcd-client", "sidecarset-apiserver-tls")},
		{name: "certificates from cert-manager", args: []string{"--set", "certificates.source=cert-manager"}, add: join(
			namespaced("Issuer", "sidecarset-selfsigned", "sidecarset-etcd-ca", "sidecarset-serving-ca"),
			namespaced("Certificate", "sidecarset-etcd-ca", "sidecarset-serving-ca", "sidecarset-etcd-server", "sidecarset-etcd-peer",
				"sidecarset-etcd-client", "sidecarset-apiserver-tls"))},
		{name: "certificates from existing Secrets", args: existingSecrets},
		{name: "namespace created", args: with(existingSecrets, "createNamespace=true"), add: cluster("Namespace", Namespace)},
		{name: "one replica: no server PodDisruptionBudget", args: with(existingSecrets, "replicas=1"),
			leaveOut: namespaced("PodDisruptionBudget", "sidecarset-apiserver")},
		{name: "PodDisruptionBudgets off", args: with(existingSecrets, "podDisruptionBudget.enabled=false"),
			leaveOut: namespaced("PodDisruptionBudget", "sidecarset-apiserver", "sidecarset-etcd")},
		{name: "PriorityClass created under the chart's name", args: with(existingSecrets, "priorityClass.create=true"),
			add: cluster("PriorityClass", "sidecarset-critical")},
		{name: "PriorityClass created under a name given", args: with(existingSecrets, "priorityClass.create=true", "priorityClass.name=platform-critical"),
			add: cluster("PriorityClass", "platform-critical")},
		{name: "an existing PriorityClass: none created", args: with(existingSecrets, "priorityClass.name=system-cluster-critical")},
		{name: "ServiceMonitors", args: with(existingSecrets, "metrics.serviceMonitor.enabled=true"),
			add: join(namespaced("ServiceMonitor", "sidecarset-apiserver", "sidecarset-etcd"), cluster("ClusterRole", "sidecarset-apiserver-metrics-reader"))},
		{name: "one backup hour", args: with(existingSecrets, "etcd.backup.hours={7}"),
			add: namespaced("CronJob", "sidecarset-etcd-backup-07"), leaveOut: namespaced("CronJob", backupJobs...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := keys(nil)
			for _, k := range join(common, tc.add) {
				want[k] = true
			}
			for _, k := range tc.leaveOut {
				delete(want, k)
			}
			if diff := cmp.Diff(want, keys(e.template(t, tc.args...))); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
		})
	}
}

var backupJobs = []string{"sidecarset-etcd-backup-00", "sidecarset-etcd-backup-06", "sidecarset-etcd-backup-12", "sidecarset-etcd-backup-18"}

func keys(objs map[Key]*unstructured.Unstructured) map[Key]bool {
	out := map[Key]bool{}
	for k := range objs {
		out[k] = true
	}
	return out
}

func cluster(kind string, names ...string) []Key { return namespacedIn("", kind, names...) }

func namespaced(kind string, names ...string) []Key { return namespacedIn(Namespace, kind, names...) }

func namespacedIn(ns, kind string, names ...string) []Key {
	out := make([]Key, 0, len(names))
	for _, n := range names {
		out = append(out, Key{kind, ns, n})
	}
	return out
}

func join(lists ...[]Key) []Key {
	var out []Key
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// with returns args followed by a --set of each value.
func with(args []string, values ...string) []string {
	out := append([]string{}, args...)
	for _, v := range values {
		out = append(out, "--set", v)
	}
	return out
}

// TestChartValues renders values the kustomization has no overlay for and checks where they land:
// server replicas, image pull policy, resources, etcd members (the server's --etcd-servers, etcd's
// --initial-cluster, cert-manager's DNS names), etcd's storage and quota, the backup hours and
// their claim; and that the etcd StatefulSet still listens only with TLS and client certificates.
func TestChartValues(t *testing.T) {
	e := setup(t)
	for _, source := range []string{"secrets", "cert-manager"} {
		t.Run(source, func(t *testing.T) {
			args := []string{"--set", "certificates.source=" + source,
				"--set", "replicas=3", "--set", "image.pullPolicy=IfNotPresent",
				"--set", "resources.limits.memory=2Gi",
				"--set", "etcd.replicas=5", "--set", "etcd.resources.requests.cpu=1500m",
				"--set", "etcd.persistence.storageClassName=fast", "--set", "etcd.persistence.size=50Gi",
				"--set", "etcd.quotaBackendBytes=8589934592",
				"--set", "etcd.backup.hours={3}", "--set", "etcd.backup.persistence.size=40Gi"}
			if source == "secrets" {
				args = append(args, CertFlags(e.certs)...)
			}
			objs := e.template(t, args...)
			ns := Namespace

			dep := get(t, objs, Key{"Deployment", ns, "sidecarset-apiserver"})
			expect(t, dep, int64(3), "spec", "replicas")
			c := container(t, dep)
			expect(t, c, "IfNotPresent", "imagePullPolicy")
			expect(t, c, "2Gi", "resources", "limits", "memory")
			expect(t, c, "100m", "resources", "requests", "cpu")
			servers := members(5, "https://", ".sidecarset-etcd.$(POD_NAMESPACE).svc:2379", false)
			if args := strings.Join(stringsAt(t, c, "args"), " "); !strings.Contains(args, "--etcd-servers="+servers+" ") {
				t.Errorf("the server's args %q have no --etcd-servers=%s", args, servers)
			}

			sts := get(t, objs, Key{"StatefulSet", ns, "sidecarset-etcd"})
			expect(t, sts, int64(5), "spec", "replicas")
			c = container(t, sts)
			expect(t, c, "1500m", "resources", "requests", "cpu")
			expect(t, c, "2Gi", "resources", "limits", "memory")
			etcdArgs := strings.Join(stringsAt(t, c, "args"), " ")
			for _, w := range []string{
				"--initial-cluster=" + members(5, "https://", ".sidecarset-etcd.$(POD_NAMESPACE).svc:2380", true) + " ",
				"--quota-backend-bytes=8589934592 ",
			} {
				if !strings.Contains(etcdArgs, w) {
					t.Errorf("etcd's args %q have no %s", etcdArgs, w)
				}
			}
			claims, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
			if len(claims) != 1 {
				t.Fatalf("%d volumeClaimTemplates", len(claims))
			}
			claim := &unstructured.Unstructured{Object: claims[0].(map[string]interface{})}
			expect(t, claim, "fast", "spec", "storageClassName")
			expect(t, claim, "50Gi", "spec", "resources", "requests", "storage")
			var typed appsv1.StatefulSet
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sts.Object, &typed); err != nil {
				t.Fatal(err)
			}
			if err := deploycheck.EtcdTLS(&typed); err != nil {
				t.Errorf("etcd accepts or offers insecure connections:\n%v", err)
			}

			backup := get(t, objs, Key{"PersistentVolumeClaim", ns, "sidecarset-etcd-backup"})
			expect(t, backup, "fast", "spec", "storageClassName") // etcd.persistence's by default
			expect(t, backup, "40Gi", "spec", "resources", "requests", "storage")
			var cronJobs []string
			for k := range objs {
				if k.Kind == "CronJob" {
					cronJobs = append(cronJobs, k.Name)
				}
			}
			if len(cronJobs) != 1 || cronJobs[0] != "sidecarset-etcd-backup-03" {
				t.Fatalf("CronJobs %v, want sidecarset-etcd-backup-03 alone", cronJobs)
			}
			cron := get(t, objs, Key{"CronJob", ns, "sidecarset-etcd-backup-03"})
			expect(t, cron, "0 3 * * *", "spec", "schedule")
			jobContainers, _, _ := unstructured.NestedSlice(cron.Object, "spec", "jobTemplate", "spec", "template", "spec", "containers")
			if cmd := stringsAt(t, &unstructured.Unstructured{Object: jobContainers[0].(map[string]interface{})}, "command"); cmd[len(cmd)-1] != "/backup/snapshot-03.db" {
				t.Errorf("the backup writes %v", cmd)
			}

			if source == "cert-manager" {
				for name, extra := range map[string]int{"sidecarset-etcd-server": 4, "sidecarset-etcd-peer": 0} {
					cert := get(t, objs, Key{"Certificate", ns, name})
					dns := strings.Join(stringsAt(t, cert, "spec", "dnsNames"), ",")
					if !strings.HasPrefix(dns, members(5, "", ".sidecarset-etcd."+Namespace+".svc", false)) || strings.Count(dns, ",") != 4+extra {
						t.Errorf("Certificate %s: dnsNames %s do not name the 5 members first", name, dns)
					}
				}
			}
		})
	}
}

// TestChartRefusesInvalidValues: what the chart refuses to render, with a message that says why.
func TestChartRefusesInvalidValues(t *testing.T) {
	e := setup(t)
	cm := []string{"--set", "certificates.source=cert-manager"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no certificate files", []string{"--set", "certificates.source=secrets"}, "certificates.etcdCA is required with certificates.source=secrets: --set-file certificates.etcdCA=artifacts/deploy/certs/etcd-ca.crt"},
		{"certificate files with the default source", without(CertFlags(e.certs), "certificates.source="),
			"certificates.source is self-managed, yet certificate files are given (certificates.etcdCA, ...): set certificates.source=secrets to use them"},
		{"a lifetime that is no Go duration", []string{"--set", "certificates.selfManaged.duration=1y"}, "at '/certificates/selfManaged/duration'"},
		{"an issuer of another kind", append(cm, "--set", "certificates.certManager.issuerRef.kind=Vault"), "at '/certificates/certManager/issuerRef/kind': value must be one of 'Issuer', 'ClusterIssuer'"},
		{"renewBefore that is no Go duration", append(cm, "--set", "certificates.certManager.renewBefore=soon"), "at '/certificates/certManager/renewBefore'"},
		{"port 0", []string{"--set", "securePort=0"}, "at '/securePort': minimum: got 0, want 1"},
		{"one certificate file missing", without(CertFlags(e.certs), "certificates.apiserver.key="), "certificates.apiserver.key is required"},
		{"unknown certificate source", []string{"--set", "certificates.source=vault"}, `at '/certificates/source': value must be one of 'self-managed', 'secrets', 'cert-manager', 'existingSecrets'`},
		{"even etcd members", append(cm, "--set", "etcd.replicas=4"), "etcd.replicas is 4: an etcd cluster needs an odd number of members"},
		{"no etcd member", append(cm, "--set", "etcd.replicas=0"), "at '/etcd/replicas': minimum: got 0, want 1"},
		{"backup hour out of range", append(cm, "--set", "etcd.backup.hours={6,24}"), "at '/etcd/backup/hours/1': maximum: got 24, want 23"},
		{"the kubelet's port on the host network", append(cm, "--set", "hostNetwork=true", "--set", "securePort=10250"),
			"securePort is 10250 with hostNetwork=true: that port of the node is the kubelet's port; pick one nothing on the nodes listens on"},
		{"kube-proxy's health port on the host network", append(cm, "--set", "hostNetwork=true", "--set", "securePort=10256"),
			"securePort is 10256 with hostNetwork=true: that port of the node is kube-proxy's health port"},
		{"a privileged port on the host network", append(cm, "--set", "hostNetwork=true", "--set", "securePort=443"),
			"securePort is 443 with hostNetwork=true: the server runs as non-root and cannot bind a port below 1024"},
		{"port out of range", append(cm, "--set", "securePort=70000"), "at '/securePort': maximum: got 70,000, want 65,535"},
		{"PriorityClass above the system's", append(cm, "--set", "priorityClass.create=true", "--set", "priorityClass.value=2000000000"),
			"at '/priorityClass/value': maximum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Template(e.helm, e.root, tc.args...)
			if err == nil {
				t.Fatalf("helm template rendered:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}

// TestChartTemplateScript: hack/chart-template.sh, for a shell's `| kubectl apply --dry-run=server
// -f -`, prints what Template renders with the same certificates and values.
func TestChartTemplateScript(t *testing.T) {
	e := setup(t)
	cmd := exec.Command(filepath.Join(e.root, "hack/chart-template.sh"), "--namespace", Namespace, "--set", "replicas=3")
	cmd.Env = append(os.Environ(), "CERT_DIR="+e.certs, "NAMESPACE="+Namespace)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("hack/chart-template.sh: %v\n%s", err, stderr)
	}
	want, err := Template(e.helm, e.root, append(CertFlags(e.certs), "--set", "replicas=3")...)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(want) {
		t.Errorf("hack/chart-template.sh printed\n%s\nwant\n%s", out, want)
	}
	rendered, err := Render(e.root, e.certs, "--set", "replicas=3")
	if err != nil {
		t.Fatal(err)
	}
	if string(rendered) != string(want) {
		t.Errorf("Render returned\n%s\nwant\n%s", rendered, want)
	}
}

// without returns the --set-file flags but the one whose value starts with prefix.
func without(flags []string, prefix string) []string {
	var out []string
	for i := 0; i+1 < len(flags); i += 2 {
		if !strings.HasPrefix(flags[i+1], prefix) {
			out = append(out, flags[i], flags[i+1])
		}
	}
	return out
}

// members returns the etcd members' names (name=URL with named), each prefix+name+suffix, joined by commas.
func members(n int, prefix, suffix string, named bool) string {
	var m []string
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%ssidecarset-etcd-%d%s", prefix, i, suffix)
		if named {
			s = fmt.Sprintf("sidecarset-etcd-%d=%s", i, s)
		}
		m = append(m, s)
	}
	return strings.Join(m, ",")
}

func get(t *testing.T, objs map[Key]*unstructured.Unstructured, k Key) *unstructured.Unstructured {
	t.Helper()
	o, ok := objs[k]
	if !ok {
		t.Fatalf("no %s rendered", k)
	}
	return o
}

// container returns the first container of a Deployment's or StatefulSet's pod template.
func container(t *testing.T, o *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	cs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil || len(cs) == 0 {
		t.Fatalf("%s %s: no containers (%v)", o.GetKind(), o.GetName(), err)
	}
	return &unstructured.Unstructured{Object: cs[0].(map[string]interface{})}
}

func expect(t *testing.T, o *unstructured.Unstructured, want interface{}, path ...string) {
	t.Helper()
	got, found, err := unstructured.NestedFieldNoCopy(o.Object, path...)
	if f, ok := got.(float64); ok {
		got = int64(f)
	}
	if err != nil || !found || got != want {
		t.Errorf("%s %s: %s is %v (found %t, %v), want %v", o.GetKind(), o.GetName(), strings.Join(path, "."), got, found, err, want)
	}
}

func stringsAt(t *testing.T, o *unstructured.Unstructured, path ...string) []string {
	t.Helper()
	s, found, err := unstructured.NestedStringSlice(o.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s %s: %s: found %t, %v", o.GetKind(), o.GetName(), strings.Join(path, "."), found, err)
	}
	return s
}
