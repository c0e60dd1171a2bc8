package certificates

import (
	"os"
	"sort"
	"sync"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The certificate label of sidecarset_certificate_expiration_timestamp_seconds for each Secret of
// the installation.
var certificateLabels = map[string]string{
	ServingSecret:    "serving",
	ServingCASecret:  "serving-ca",
	EtcdClientSecret: "etcd-client",
	EtcdCASecret:     "etcd-ca",
	EtcdServerSecret: "etcd-server",
	EtcdPeerSecret:   "etcd-peer",
}

// Label is the certificate label of a Secret of the installation ("" for another).
func Label(secret string) string { return certificateLabels[secret] }

var expiryDesc = metrics.NewDesc("sidecarset_certificate_expiration_timestamp_seconds",
	"When a certificate the installation uses expires (Unix seconds), by certificate: serving (the server's serving certificate), "+
		"serving-ca (its CA, the APIServices' caBundle), etcd-client (the server's etcd client certificate), etcd-ca (the CA etcd "+
		"trusts), and with self-managed certificates etcd-server and etcd-peer (etcd's own, read from their Secrets). Of a CA file "+
		"holding several certificates, the first.",
	[]string{"certificate"}, nil, metrics.ALPHA, "")

// Expiry is the source of sidecarset_certificate_expiration_timestamp_seconds: certificate files
// read at each scrape, and a Manager's last reading for the certificates no file gives.
type Expiry struct {
	// Files maps a certificate label to the PEM file that holds it (the first certificate).
	Files map[string]string
	// Manager, when set, gives the certificates of its Secrets.
	Manager *Manager
}

// Read returns when each certificate expires, by label; an unreadable file is left out.
func (e Expiry) Read() map[string]time.Time {
	out := map[string]time.Time{}
	if e.Manager != nil {
		for secret, t := range e.Manager.NotAfter() {
			if l := Label(secret); l != "" {
				out[l] = t
			}
		}
	}
	for label, path := range e.Files {
		if path == "" {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if certs, err := cert.ParseCertsPEM(data); err == nil {
			out[label] = certs[0].NotAfter
		}
	}
	return out
}

type expiryCollector struct {
	metrics.BaseStableCollector
	mu     sync.Mutex
	source Expiry
}

func (c *expiryCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- expiryDesc }

func (c *expiryCollector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	src := c.source
	c.mu.Unlock()
	got := src.Read()
	labels := make([]string, 0, len(got))
	for l := range got {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, l := range labels {
		ch <- metrics.NewLazyConstMetric(expiryDesc, metrics.GaugeValue, float64(got[l].Unix()), l)
	}
}

var (
	collector     = &expiryCollector{}
	collectorOnce sync.Once
)

// ServeExpiry makes /metrics serve sidecarset_certificate_expiration_timestamp_seconds from
// source (registered once per process with legacyregistry; a later call replaces the source).
func ServeExpiry(source Expiry) {
	collectorOnce.Do(func() { legacyregistry.CustomMustRegister(collector) })
	collector.mu.Lock()
	collector.source = source
	collector.mu.Unlock()
}
