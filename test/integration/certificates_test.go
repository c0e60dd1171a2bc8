package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"

	"github.com/sidecarset/apiserver/cmd/apiserver/app"
	"github.com/sidecarset/apiserver/pkg/certificates"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestSelfManagedServingCertificateRotates starts the server with --self-managed-certificates,
// certificates that live 6 seconds (renewed at 4) and a check every second, on a cluster whose
// Secrets a fake clientset holds: the server serves the certificate of the Secret
// sidecarset-apiserver-tls, then, without a restart, the one that replaces it, signed by the
// serving CA; its expiry metric follows.
func TestSelfManagedServingCertificateRotates(t *testing.T) {
	client := fake.NewClientset()
	dir := t.TempDir()
	s := framework.StartServer(t, func(o *app.Options) {
		o.Namespace = "certs"
		o.SelfManagedCertificates = true
		o.Certificates.LeafLife, o.Certificates.CALife, o.Certificates.Interval = 6*time.Second, time.Hour, time.Second
		o.Certificates.Client, o.Certificates.APIServices = client, nil
		o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile = filepath.Join(dir, "tls.crt")
		o.RecommendedOptions.SecureServing.ServerCert.CertKey.KeyFile = filepath.Join(dir, "tls.key")
		o.ServingCAFile = filepath.Join(dir, "ca.crt")
	})
	host, err := url.Parse(s.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	first := served(t, host.Host)
	stored := storedServing(t, client)
	if !first.Equal(stored) {
		t.Fatalf("the server serves %s (serial %s), not the Secret's certificate (serial %s)", first.Subject, first.SerialNumber, stored.SerialNumber)
	}
	if first.Subject.CommonName != "sidecarset-apiserver.certs.svc" {
		t.Errorf("serving certificate for %q, want sidecarset-apiserver.certs.svc", first.Subject.CommonName)
	}
	var next *x509.Certificate
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		next = served(t, host.Host)
		return !next.Equal(first), nil
	})
	if err != nil {
		t.Fatalf("the server still serves the first certificate (until %v) 20 s later", first.NotAfter)
	}
	t.Logf("served certificate replaced %v after it was issued", time.Since(first.NotBefore).Round(100*time.Millisecond))
	ca, err := client.CoreV1().Secrets("certs").Get(context.Background(), certificates.ServingCASecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.Data["ca.crt"])
	if _, err := next.Verify(x509.VerifyOptions{Roots: roots, DNSName: "sidecarset-apiserver.certs.svc"}); err != nil {
		t.Errorf("the renewed serving certificate does not verify against the serving CA: %v", err)
	}
	if !next.NotBefore.After(first.NotBefore) {
		t.Errorf("the renewed certificate starts at %v, not after the first (%v)", next.NotBefore, first.NotBefore)
	}
	checkExpiryMetric(t, s.Config, next)
}

// served returns the certificate the server presents to a client that is not its loopback.
func served(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "sidecarset-apiserver.certs.svc", InsecureSkipVerify: true}) //nolint:gosec // the test reads the certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func storedServing(t *testing.T, client *fake.Clientset) *x509.Certificate {
	t.Helper()
	s, err := client.CoreV1().Secrets("certs").Get(context.Background(), certificates.ServingSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := cert.ParseCertsPEM(s.Data["tls.crt"])
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// checkExpiryMetric: /metrics gives the served certificate's expiry (the file is read at each
// scrape).
func checkExpiryMetric(t *testing.T, cfg *rest.Config, served *x509.Certificate) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const series = `sidecarset_certificate_expiration_timestamp_seconds{certificate="serving"} `
	var line string
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		resp, err := client.Get(cfg.Host + "/metrics")
		if err != nil {
			return false, nil
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, nil
		}
		for _, l := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(l, series) {
				line = l
				v, err := strconv.ParseFloat(strings.TrimPrefix(l, series), 64)
				return err == nil && int64(v) == served.NotAfter.Unix(), nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Errorf("/metrics: %q, want the served certificate's expiry %d", line, served.NotAfter.Unix())
	}
}
