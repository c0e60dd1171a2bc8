package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// metricNamesFile lists the metric names the chart's alerts and dashboard read, each with what
// exposes it; test/monitoring writes it from their expressions (parsed with Prometheus' parser)
// and fails while it is out of date.
const metricNamesFile = "artifacts/monitoring/metric-names.txt"

// The origins in metricNamesFile this test checks; the others (kube-apiserver,
// kube-state-metrics) are exposed outside this project and skipped.
const (
	originServer = "server"
	originEtcd   = "etcd"
)

// TestMonitoringMetricsExposed: every metric name that the chart's alerts and dashboard read from
// this server or its etcd (metricNamesFile) is exposed by the running server and the server's
// etcd, once a SidecarSet has rolled a new sidecar over one of two pods (the other held by its
// partition): the controller's gauges, counters and histograms, the client-go workqueue metrics
// of both controllers' named queues, and the leader-election metric of the controller Lease. The
// names of kube-apiserver and kube-state-metrics are listed as skipped.
func TestMonitoringMetricsExposed(t *testing.T) {
	parallelTest(t)
	want := readMetricNames(t)
	ss := simpleSidecarSet("monitoring", "busybox:1.36", nil)
	ss.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromInt32(1))
	setupUpgrade(t, ss, "monitoring", 2)
	patchImage(t, "monitoring", `{"spec":{"containers":[{"name":"sidecar1","image":"busybox:1.37"}]}}`)
	// One pod upgraded and ready (pods_upgraded_total, pod_upgrade_duration_seconds), one waiting
	// on the partition (pods_waiting).
	waitStatus(t, "monitoring", v1alpha1.SidecarSetStatus{MatchedPods: 2, UpdatedPods: 1, ReadyPods: 2, UpdatedReadyPods: 1})
	// A SidecarSet read through kube-apiserver: the server's apiserver_request_* for apps.kruise.io.
	if _, err := sidecars.AppsV1alpha1().SidecarSets().Get(context.Background(), "monitoring", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	// The controllers run on the replica holding the Lease: the server's names are those of the
	// replicas together, and one of them must lead.
	series := []string{
		`leader_election_master_status{name="sidecarset-controller"} 1`,
		`workqueue_depth{name="sidecarset"} `,
		`workqueue_depth{name="sidecarset-policies"} `,
	}
	last, ok := poll(2*time.Minute, func(ctx context.Context) (bool, string) {
		server, etcd := map[string]bool{}, map[string]bool{}
		var text strings.Builder
		for _, replica := range []int{1, 2} {
			body, err := scrapeReplica(ctx, t, replica)
			if err != nil {
				if replica == 1 {
					return false, fmt.Sprintf("replica 1: %v", err)
				}
				continue // replica 2 runs only while a test started it
			}
			text.WriteString(body)
			addSampleNames(server, body)
		}
		body, err := scrapeServerEtcd(ctx)
		if err != nil {
			return false, fmt.Sprintf("the server's etcd: %v", err)
		}
		addSampleNames(etcd, body)
		var missing []string
		for name, origin := range want {
			if (origin == originServer && !server[name]) || (origin == originEtcd && !etcd[name]) {
				missing = append(missing, origin+" "+name)
			}
		}
		for _, s := range series {
			if !hasLinePrefix(text.String(), s) {
				missing = append(missing, "series "+strings.TrimSpace(s))
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, "not exposed: " + strings.Join(missing, ", ")
	})
	if !ok {
		t.Errorf("the metrics the alerts and the dashboard read are not all exposed (%s):\n%s", metricNamesFile, last)
	}
	var skipped []string
	for name, origin := range want {
		if origin != originServer && origin != originEtcd {
			skipped = append(skipped, name+" ("+origin+")")
		}
	}
	sort.Strings(skipped)
	t.Logf("skipped, exposed outside this project: %s", strings.Join(skipped, ", "))
}

// readMetricNames reads metricNamesFile: name -> origin.
func readMetricNames(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, metricNamesFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("%s:%d: %q is not NAME ORIGIN", metricNamesFile, i+1, line)
		}
		out[f[0]] = f[1]
	}
	if len(out) == 0 {
		t.Fatalf("%s lists no metric", metricNamesFile)
	}
	return out
}

// addSampleNames adds the metric name of every sample of a text exposition to names (histograms
// by their _bucket, _sum and _count samples).
func addSampleNames(names map[string]bool, exposition string) {
	sc := bufio.NewScanner(strings.NewReader(exposition))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
}

func hasLinePrefix(text, prefix string) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}

// scrapeReplica reads server replica n's /metrics as cluster admin (the server authorizes it
// with kube-apiserver, as it does a Prometheus' token).
func scrapeReplica(ctx context.Context, t *testing.T, replica int) (string, error) {
	data, err := replicaClient(t, replica).Get().AbsPath("/metrics").DoRaw(ctx)
	return string(data), err
}

// scrapeServerEtcd reads the /metrics of the server's etcd (hack/local-up.sh's server-etcd) on its
// client port, with the server's etcd client certificate.
func scrapeServerEtcd(ctx context.Context) (string, error) {
	certs := filepath.Join(localState(), "certs")
	pair, err := tls.LoadX509KeyPair(filepath.Join(certs, "server-etcd-client.crt"), filepath.Join(certs, "server-etcd-client.key"))
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(filepath.Join(certs, "etcd-ca.crt"))
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("no certificate in %s", filepath.Join(certs, "etcd-ca.crt"))
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", envInt("SERVER_ETCD_PORT", 32381))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), nil
}
