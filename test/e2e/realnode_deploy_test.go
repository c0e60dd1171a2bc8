package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/sidecar"
)

// TestRealNodeDeployment runs the shipped deployment, artifacts/deploy, on the real node through
// the overlay test/e2e/testdata/deploy-real-node: the server's image from `make image`, etcd's own
// server and etcdctl from hack/etcdimage (hack/local-up.sh node-deploy-images builds both and
// imports them into the node's containerd), the certificates of hack/deploy-certs.sh. The local
// server (a host process behind the same APIService names) is stopped meanwhile and started again
// at the end (hack/local-up.sh stop-server, start-server), with its registration.
//
// What the cluster lacks, the test provides while it runs, outside the manifests:
//   - cluster DNS: the kubelet's clusterDNS is the pod bridge's address (NODE_DNS), where the test
//     answers A queries for <pod>.<subdomain>.<ns>.svc (the etcd members' names, also before they
//     are ready, as publishNotReadyAddresses asks), <svc>.<ns>.svc (a headless Service: its pods;
//     otherwise its cluster IP), each also under .cluster.local, from the API;
//   - kube-proxy: iptables DNAT rules in a chain of its own for the two Services the deployment
//     dials by cluster IP: kubernetes (the pods' in-cluster configuration; to a TCP relay on the
//     bridge's address that forwards to kube-apiserver's loopback port) and sidecarset-apiserver
//     (kube-apiserver's aggregation layer and webhook calls; to its ready endpoints, random).
//
// It checks that the three etcd members form a TLS cluster and become ready, the two server pods
// run the image of `make image` and become ready, the APIServices become Available through the
// Service, a pod on the real node is injected and its sidecar upgraded in place; then that one etcd
// member and the leading server pod deleted, injection and a rollout go on; and that `kubectl
// delete -k` of the overlay leaves no MutatingAdmissionPolicy, binding or webhook configuration
// behind.
func TestRealNodeDeployment(t *testing.T) {
	requireRealNode(t, true)
	if os.Getuid() != 0 {
		t.Skip("needs root (iptables rules for the Services' cluster IPs, DNS on port 53)")
	}
	ctx := context.Background()
	const ns = serverNamespace
	overlay := filepath.Join(root, "test/e2e/testdata/deploy-real-node")
	dnsIP := os.Getenv("NODE_DNS")
	if dnsIP == "" {
		dnsIP = "10.222.0.1"
	}

	start := time.Now()
	if _, err := localUp("node-deploy-images"); err != nil {
		t.Fatal(err)
	}
	t.Logf("images built and imported: %v", time.Since(start).Round(time.Second))
	if out, err := exec.Command(filepath.Join(root, "hack/deploy-certs.sh")).CombinedOutput(); err != nil {
		t.Fatalf("hack/deploy-certs.sh: %v\n%s", err, out)
	}

	ensureBridge(t, dnsIP)
	// The local server gives way; everything of the deployment goes at the end, then it comes back.
	if _, err := localUp("stop-server"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		waitNamespaceGone(t, ns)
		if _, err := localUp("start-server"); err != nil {
			t.Errorf("the local server did not come back: %v", err)
		}
	})
	// The local registration's ExternalName Service has the deployed Service's name.
	if err := kube.CoreV1().Services(ns).Delete(ctx, "sidecarset-apiserver", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	// Cluster DNS and the Services' routes, for as long as the test runs.
	dns, err := startClusterDNS(dnsIP)
	if err != nil {
		t.Fatalf("cluster DNS on %s:53 (the pod bridge's address; is the real node up?): %v", dnsIP, err)
	}
	t.Cleanup(dns.stop)
	router, err := startServiceRouter(dnsIP, fmt.Sprintf("127.0.0.1:%d", envInt("KUBE_PORT", 36443)), ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(router.stop)
	createLocalVolumes(t)
	// On a failure, the deployment goes while its DNS, routes and volumes are still there.
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			if out, err := runKubectl(t, "", "delete", "-k", overlay, "--ignore-not-found", "--wait=true", "--timeout=180s"); err != nil {
				t.Errorf("kubectl delete -k: %v\n%s", err, out)
			}
		}
	})

	applied := time.Now()
	if out, err := runKubectl(t, "", "apply", "-k", overlay); err != nil {
		t.Fatalf("kubectl apply -k: %v\n%s", err, out)
	}
	waitReady(t, ns, "app=sidecarset-etcd", 3, 6*time.Minute)
	t.Logf("apply to 3 etcd members ready: %v", time.Since(applied).Round(time.Second))
	servers := waitReady(t, ns, "app=sidecarset-apiserver", 2, 4*time.Minute)
	t.Logf("apply to 2 server pods ready: %v", time.Since(applied).Round(time.Second))
	checkServerImage(t, servers)
	checkEtcdCluster(t, ns)
	for _, name := range []string{"v1alpha1.apps.kruise.io", "v1beta1.apps.kruise.io", "v1.admission.kruise.io"} {
		if out, err := runKubectl(t, "", "wait", "--for=condition=Available", "--timeout=120s", "apiservice/"+name); err != nil {
			t.Fatalf("APIService %s: %v\n%s", name, err, out)
		}
		as, err := runKubectl(t, "", "get", "apiservice", name, "-o", "jsonpath={.spec.service.namespace}/{.spec.service.name}:{.spec.service.port}")
		if err != nil || as != ns+"/sidecarset-apiserver:443" {
			t.Fatalf("APIService %s routes to %q (%v), want the deployed Service", name, as, err)
		}
	}
	t.Logf("apply to APIServices Available: %v", time.Since(applied).Round(time.Second))

	// Injection and an in-place upgrade on the real node, served by the deployment.
	ss := &v1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: "rn-deploy"},
		Spec: v1alpha1.SidecarSetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "rn-deploy"}},
			UpdateStrategy: v1alpha1.SidecarSetUpdateStrategy{Type: v1alpha1.RollingUpdateSidecarSetStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))},
			Containers:     []v1alpha1.SidecarContainer{realSidecar("sidecar1", "v1", 8081)},
		},
	}
	before := setupRealNode(t, ss, realPod("rn-deploy-0", "rn-deploy"))[0]
	if st := sidecar.ContainerStatus(before, "sidecar1"); st == nil || st.State.Running == nil {
		t.Fatalf("rn-deploy-0 not injected: %+v", before.Spec.Containers)
	}
	upgradeInPlace(t, "rn-deploy", before, "sidecar1", `{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:v2"}]}}`)

	// One etcd member and the leading server pod go; injection and the rollout go on.
	lease, err := kube.CoordinationV1().Leases(ns).Get(ctx, "sidecarset-controller", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("controller lease: %v %+v", err, lease)
	}
	leader, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	if leader != servers[0].Name && leader != servers[1].Name {
		t.Fatalf("the lease holder %q is none of the server pods %s, %s", *lease.Spec.HolderIdentity, servers[0].Name, servers[1].Name)
	}
	killed := time.Now()
	for _, p := range []string{"sidecarset-etcd-1", leader} {
		if err := kube.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("deleted etcd member sidecarset-etcd-1 and the leading server pod %s", leader)
	second := realPod("rn-deploy-1", "rn-deploy")
	// Every second, each failure logged (the recovery's timeline): each try creates the pod.
	eventuallyEvery(t, "pod "+second.Name+" created after the deletions", time.Second, 2*time.Minute, func(ctx context.Context) (bool, string) {
		_, err := kube.CoreV1().Pods(realNodeNamespace).Create(ctx, second, metav1.CreateOptions{})
		if err != nil {
			t.Logf("create %s: %v", second.Name, err)
		}
		return err == nil, fmt.Sprintf("create: %v", err)
	})
	p := waitPodRunning(t, realNodeNamespace, second.Name, true)
	if st := sidecar.ContainerStatus(p, "sidecar1"); st == nil || !reportsImage(st, testImage+":v2") {
		t.Fatalf("%s not injected with sidecar1 v2 after the deletions: %+v", second.Name, p.Spec.Containers)
	}
	t.Logf("deletions to a new pod injected and running: %v", time.Since(killed).Round(100*time.Millisecond))
	patchImage(t, "rn-deploy", `{"spec":{"containers":[{"name":"sidecar1","image":"sidecarset.dev/test:v3"}]}}`)
	waitStatus(t, "rn-deploy", v1alpha1.SidecarSetStatus{MatchedPods: 2, UpdatedPods: 2, ReadyPods: 2, UpdatedReadyPods: 2})
	for _, name := range []string{before.Name, second.Name} {
		waitContainerLog(t, name, "sidecar1", "version=v3")
	}
	t.Logf("deletions to both pods upgraded to v3: %v", time.Since(killed).Round(100*time.Millisecond))
	waitReady(t, ns, "app=sidecarset-etcd", 3, 3*time.Minute)
	waitReady(t, ns, "app=sidecarset-apiserver", 2, 3*time.Minute)
	checkEtcdCluster(t, ns)
	checkBackup(t, ns)
	checkDefrag(t, ns)

	// Uninstall with the SidecarSet and its pods still there: its policy and binding (policy mode,
	// the default) go with the APIService that owns them, the webhook configuration with the rest.
	policies, err := runKubectl(t, "", "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings", "-l", "app.kubernetes.io/managed-by=sidecarset-apiserver", "-o", "name")
	if err != nil || !strings.Contains(policies, "mutatingadmissionpolicy.") || !strings.Contains(policies, "mutatingadmissionpolicybinding.") {
		t.Fatalf("no policy and binding of the deployed server before delete -k: %v\n%s", err, policies)
	}
	t.Logf("before delete -k: %s", strings.Join(strings.Fields(policies), " "))
	t.Cleanup(func() {
		_ = kube.CoreV1().Pods(realNodeNamespace).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	deleted = true
	if out, err := runKubectl(t, "", "delete", "-k", overlay, "--wait=true", "--timeout=180s"); err != nil {
		t.Fatalf("kubectl delete -k: %v\n%s", err, out)
	}
	// Every second: each try runs kubectl.
	eventuallyEvery(t, "kubectl delete -k to leave no policy, binding or webhook configuration", time.Second, 2*time.Minute, func(ctx context.Context) (bool, string) {
		out, err := runKubectl(t, "", "get", "mutatingadmissionpolicies,mutatingadmissionpolicybindings,mutatingwebhookconfigurations", "-l", "app.kubernetes.io/managed-by=sidecarset-apiserver", "-o", "name")
		if err != nil {
			return false, fmt.Sprintf("kubectl get: %v: %s", err, out)
		}
		left := strings.Join(strings.Fields(out), " ")
		_, err = kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "sidecarset-injector", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			left += " mutatingwebhookconfiguration/sidecarset-injector"
		}
		return strings.TrimSpace(left) == "", "left behind: " + left
	})
	t.Log("kubectl delete -k left no policy, binding or webhook configuration")
}

// checkBackup runs one of the snapshot CronJobs now (a Job from its template) and checks that
// etcdctl wrote its snapshot onto the backup volume.
func checkBackup(t *testing.T, ns string) {
	t.Helper()
	if out, err := runKubectl(t, "", "-n", ns, "create", "job", "backup-now", "--from=cronjob/sidecarset-etcd-backup-00"); err != nil {
		t.Fatalf("job from the backup CronJob: %v\n%s", err, out)
	}
	if out, err := runKubectl(t, "", "-n", ns, "wait", "--for=condition=Complete", "--timeout=120s", "job/backup-now"); err != nil {
		logs, _ := runKubectl(t, "", "-n", ns, "logs", "job/backup-now")
		t.Fatalf("backup job: %v\n%s\n%s", err, out, logs)
	}
	snap := filepath.Join(localState(), "node/deploy-volumes/backup/snapshot-00.db")
	if fi, err := os.Stat(snap); err != nil || fi.Size() == 0 {
		t.Fatalf("no snapshot on the backup volume: %v", err)
	}
	t.Logf("backup job wrote %s", snap)
}

// ensureBridge makes sure the pod bridge has its address ip on the host, where the DNS server and
// the relay listen: the CNI bridge plugin creates it with the node's first pod.
func ensureBridge(t *testing.T, ip string) {
	t.Helper()
	has := func() bool {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.String() == ip {
				return true
			}
		}
		return false
	}
	if has() {
		return
	}
	ctx := context.Background()
	ensureNamespace(t, realNodeNamespace)
	p := realPod("rn-deploy-bridge", "rn-deploy-bridge")
	if _, err := kube.CoreV1().Pods(realNodeNamespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodRunning(t, realNodeNamespace, p.Name, false)
	_ = kube.CoreV1().Pods(realNodeNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	if !has() {
		t.Fatalf("no host address %s (NODE_DNS) after a pod ran on the real node", ip)
	}
}

// checkDefrag runs artifacts/deploy/maintenance/etcd-defrag.yaml, the one-off defragmentation Job
// (not part of the kustomization), with the overlay's changes: the local etcd image, the real node.
func checkDefrag(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(root, "artifacts/deploy/maintenance/etcd-defrag.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(data, &job); err != nil {
		t.Fatal(err)
	}
	spec := &job.Spec.Template.Spec
	c := &spec.Containers[0]
	if !strings.HasPrefix(c.Image, "registry.k8s.io/etcd:") {
		t.Fatalf("the defragmentation Job runs %s, not the etcd image the overlay replaces", c.Image)
	}
	c.Image, c.ImagePullPolicy = "sidecarset.dev/etcd:local", corev1.PullNever
	spec.NodeSelector = map[string]string{realNodeLabel: "true"}
	spec.Tolerations = []corev1.Toleration{{Key: realNodeLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	created, err := kube.BatchV1().Jobs(ns).Create(ctx, &job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got *batchv1.Job
	last, ok := poll(2*time.Minute, func(ctx context.Context) (bool, string) {
		j, err := kube.BatchV1().Jobs(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = j
		return got.Status.Succeeded > 0 || got.Status.Failed > 0, fmt.Sprintf("status %+v", got.Status)
	})
	if !ok || got.Status.Succeeded == 0 { // the Job's log says why
		logs, _ := runKubectl(t, "", "-n", ns, "logs", "job/"+created.Name)
		t.Fatalf("defragmentation Job %s: waited 2m for it to succeed (finished %v); last seen: %s\n%s", created.Name, ok, last, logs)
	}
	logs, _ := runKubectl(t, "", "-n", ns, "logs", "job/"+created.Name)
	if n := strings.Count(logs, "Finished defragmenting etcd member"); n != 3 {
		t.Fatalf("defragmentation Job %s defragmented %d members, want 3:\n%s", created.Name, n, logs)
	}
	t.Logf("defragmentation Job %s: 3 members defragmented", created.Name)
}

// checkServerImage: the server pods run the image `make image` wrote (its config digest is the
// imageID containerd reports).
func checkServerImage(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	layout := filepath.Join(root, "_output/image/oci")
	var idx struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	var m struct {
		Config struct{ Digest string } `json:"config"`
	}
	readJSON := func(path string, v interface{}) {
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	readJSON(filepath.Join(layout, "index.json"), &idx)
	readJSON(filepath.Join(layout, "blobs/sha256", strings.TrimPrefix(idx.Manifests[0].Digest, "sha256:")), &m)
	for _, p := range pods {
		st := p.Status.ContainerStatuses
		if len(st) != 1 || p.Spec.Containers[0].Image != "sidecarset.dev/sidecarset-apiserver:local" || !strings.HasSuffix(st[0].ImageID, m.Config.Digest) {
			t.Fatalf("%s runs %s (imageID %v), want the image of make image (config %s)", p.Name, p.Spec.Containers[0].Image, st, m.Config.Digest)
		}
	}
}

// checkEtcdCluster: every member lists the three members, all started, with https peer URLs, and
// answers a status over TLS with the client certificate (etcdctl in the etcd image).
func checkEtcdCluster(t *testing.T, ns string) {
	t.Helper()
	var out string
	// Every 2 s: each try runs etcdctl in a pod through kubectl exec.
	eventuallyEvery(t, "etcd endpoint status --cluster to list 3 https endpoints", 2*time.Second, time.Minute, func(ctx context.Context) (bool, string) {
		var err error
		out, err = runKubectl(t, "", "-n", ns, "exec", "sidecarset-etcd-0", "-c", "etcd", "--", "etcdctl",
			"--endpoints=https://sidecarset-etcd-0.sidecarset-etcd."+ns+".svc:2379,https://sidecarset-etcd-1.sidecarset-etcd."+ns+".svc:2379,https://sidecarset-etcd-2.sidecarset-etcd."+ns+".svc:2379",
			"--cacert=/etc/etcd/server/ca.crt", "--cert=/etc/etcd/server/tls.crt", "--key=/etc/etcd/server/tls.key",
			"endpoint", "status", "--cluster", "-w", "json")
		return err == nil && strings.Count(out, `"Endpoint":"https://`) == 3, fmt.Sprintf("%v\n%s", err, out)
	})
	var st []struct {
		Endpoint string
		Status   struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			}
			Leader uint64
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	leaders := map[uint64]bool{}
	for _, s := range st {
		leaders[s.Status.Leader] = true
	}
	if len(st) != 3 || len(leaders) != 1 || leaders[0] {
		t.Fatalf("etcd members do not agree on a leader: %s", out)
	}
}

// createLocalVolumes creates local PersistentVolumes on the real node for the claims of the
// deployment (3 etcd members, 8Gi; the backup, 20Gi) in directories owned by the pods' user, and
// deletes them and their data at the end.
func createLocalVolumes(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(localState(), "node/deploy-volumes")
	node := os.Getenv("NODE_NAME")
	if node == "" {
		node = "real-node-0"
	}
	sizes := map[string]string{"etcd-0": "8Gi", "etcd-1": "8Gi", "etcd-2": "8Gi", "backup": "20Gi"}
	for name, size := range sizes {
		path := filepath.Join(dir, name)
		_ = os.RemoveAll(path)
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(path, 65532, 65532); err != nil {
			t.Fatal(err)
		}
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "sidecarset-e2e-" + name},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              "",
				PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: path}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}}},
			},
		}
		_ = kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
		// The create below fails, saying so, if the volume is still there.
		_, _ = poll(30*time.Second, func(ctx context.Context) (bool, string) {
			_, err := kube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), ""
		})
		if _, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		})
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
}

// clusterDNS answers A queries from the API: <pod>.<subdomain>.<ns>.svc (a pod with that hostname
// and subdomain: its IP, ready or not) and <svc>.<ns>.svc (a headless Service: its selected pods'
// IPs; otherwise its cluster IP), each also under .cluster.local. Anything else: NXDOMAIN.
type clusterDNS struct {
	conn *net.UDPConn
	wg   sync.WaitGroup
}

func startClusterDNS(ip string) (*clusterDNS, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip), Port: 53})
	if err != nil {
		return nil, err
	}
	d := &clusterDNS{conn: conn}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, addr, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if resp, err := answerDNS(buf[:n]); err == nil {
				_, _ = conn.WriteToUDP(resp, addr)
			}
		}
	}()
	return d, nil
}

func (d *clusterDNS) stop() {
	_ = d.conn.Close()
	d.wg.Wait()
}

func answerDNS(req []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RCode: dnsmessage.RCodeSuccess}
	var ips []net.IP
	known := false
	if name := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(q.Name.String()), "."), ".cluster.local"); strings.HasSuffix(name, ".svc") {
		ips, known = lookupCluster(strings.Split(strings.TrimSuffix(name, ".svc"), "."))
	}
	if !known {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if q.Type == dnsmessage.TypeA {
		for _, ip := range ips {
			var a [4]byte
			copy(a[:], ip.To4())
			if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}, dnsmessage.AResource{A: a}); err != nil {
				return nil, err
			}
		}
	}
	return b.Finish()
}

// lookupCluster resolves [svc ns] or [pod subdomain ns]; known is false for a name that does not
// exist (NXDOMAIN), true with no addresses for a Service without pods yet.
func lookupCluster(parts []string) (ips []net.IP, known bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	switch len(parts) {
	case 2:
		svc, err := kube.CoreV1().Services(parts[1]).Get(ctx, parts[0], metav1.GetOptions{})
		if err != nil {
			return nil, false
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone {
			return []net.IP{net.ParseIP(svc.Spec.ClusterIP)}, true
		}
		pods, err := kube.CoreV1().Pods(parts[1]).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
		if err != nil {
			return nil, true
		}
		for _, p := range pods.Items {
			if ip := net.ParseIP(p.Status.PodIP); ip != nil && p.DeletionTimestamp == nil && (svc.Spec.PublishNotReadyAddresses || podIsReady(&p)) {
				ips = append(ips, ip)
			}
		}
		return ips, true
	case 3:
		if _, err := kube.CoreV1().Services(parts[2]).Get(ctx, parts[1], metav1.GetOptions{}); err != nil {
			return nil, false
		}
		p, err := kube.CoreV1().Pods(parts[2]).Get(ctx, parts[0], metav1.GetOptions{})
		if err != nil || p.Spec.Hostname != parts[0] || p.Spec.Subdomain != parts[1] {
			return nil, false
		}
		if ip := net.ParseIP(p.Status.PodIP); ip != nil {
			return []net.IP{ip}, true
		}
		return nil, true
	}
	return nil, false
}

// serviceRouter stands in for kube-proxy for two Services: kubernetes (default), whose cluster IP
// the pods' in-cluster configuration dials, to a TCP relay on relayIP that forwards to
// kube-apiserver (it listens on loopback only), and sidecarset-apiserver in the deployment's
// namespace, which kube-apiserver dials for the APIServices and the webhook, to its ready endpoints. Its rules
// live in the nat chain SIDECARSET-E2E, jumped to from PREROUTING (pods) and OUTPUT (the host),
// and are rewritten when the endpoints change.
type serviceRouter struct {
	namespace string // the deployment's
	relay     net.Listener
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

const routerChain = "SIDECARSET-E2E"

func iptables(args ...string) error {
	out, err := exec.Command("iptables", append([]string{"-w", "-t", "nat"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func startServiceRouter(relayIP, kubeAPIServer, namespace string) (*serviceRouter, error) {
	relay, err := net.Listen("tcp4", relayIP+":0")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &serviceRouter{namespace: namespace, relay: relay, cancel: cancel}
	r.wg.Add(2)
	go func() {
		defer r.wg.Done()
		for {
			c, err := relay.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				u, err := net.Dial("tcp", kubeAPIServer)
				if err != nil {
					return
				}
				defer func() { _ = u.Close() }()
				go func() { _, _ = io.Copy(u, c); _ = u.(*net.TCPConn).CloseWrite() }()
				_, _ = io.Copy(c, u)
			}()
		}
	}()
	r.cleanupRules()
	for _, args := range [][]string{{"-N", routerChain}, {"-I", "PREROUTING", "-j", routerChain}, {"-I", "OUTPUT", "-j", routerChain}} {
		if err := iptables(args...); err != nil {
			r.stop()
			return nil, err
		}
	}
	go func() {
		defer r.wg.Done()
		var applied string
		for ctx.Err() == nil {
			rules := r.rules(ctx)
			if key := fmt.Sprint(rules); rules != nil && key != applied {
				if err := iptables("-F", routerChain); err == nil {
					applied = key
					for _, rule := range rules {
						if err := iptables(append([]string{"-A", routerChain}, rule...)...); err != nil {
							applied = ""
							fmt.Fprintln(os.Stderr, "service router:", err)
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return r, nil
}

// rules returns the chain's rules for the Services' current cluster IPs and endpoints, or nil if
// the API cannot say.
func (r *serviceRouter) rules(ctx context.Context) [][]string {
	k, err := kube.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	rules := [][]string{{"-d", k.Spec.ClusterIP + "/32", "-p", "tcp", "--dport", "443", "-j", "DNAT", "--to-destination", r.relay.Addr().String()}}
	svc, err := kube.CoreV1().Services(r.namespace).Get(ctx, "sidecarset-apiserver", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return rules
	}
	pods, err := kube.CoreV1().Pods(r.namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return nil
	}
	var eps []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && podIsReady(&p) {
			eps = append(eps, p.Status.PodIP+":"+svc.Spec.Ports[0].TargetPort.String())
		}
	}
	sort.Strings(eps)
	match := []string{"-d", svc.Spec.ClusterIP + "/32", "-p", "tcp", "--dport", fmt.Sprint(svc.Spec.Ports[0].Port)}
	// No ready endpoint: no rule (the cluster IP leads nowhere, as with kube-proxy's filter rule).
	for i, ep := range eps {
		rule := append([]string(nil), match...)
		if left := len(eps) - i; left > 1 {
			rule = append(rule, "-m", "statistic", "--mode", "random", "--probability", fmt.Sprintf("%.5f", 1/float64(left)))
		}
		rules = append(rules, append(rule, "-j", "DNAT", "--to-destination", ep))
	}
	return rules
}

func (r *serviceRouter) cleanupRules() {
	_ = iptables("-D", "PREROUTING", "-j", routerChain)
	_ = iptables("-D", "OUTPUT", "-j", routerChain)
	_ = iptables("-F", routerChain)
	_ = iptables("-X", routerChain)
}

func (r *serviceRouter) stop() {
	r.cancel()
	_ = r.relay.Close()
	r.wg.Wait()
	r.cleanupRules()
}
