package certificates

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/cert"
)

// fakeAggregator serves GET and merge PATCH of APIServices, keeping their caBundle.
type fakeAggregator struct {
	mu      sync.Mutex
	bundles map[string][]byte
	patches int
}

func (f *fakeAggregator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := strings.TrimPrefix(r.URL.Path, "/apis/apiregistration.k8s.io/v1/apiservices/")
	if r.Method == http.MethodPatch {
		var p struct {
			Spec struct {
				CABundle []byte `json:"caBundle"`
			} `json:"spec"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.bundles[name] = p.Spec.CABundle
		f.patches++
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"` + name +
		`"},"spec":{"caBundle":"` + base64.StdEncoding.EncodeToString(f.bundles[name]) + `"}}`))
}

// TestManagerEnsure: from an empty namespace, Ensure creates both CAs and the four leaves, writes
// the serving files, sets the APIServices' caBundle; a second Ensure writes nothing. A create that
// another writer got in before (AlreadyExists) has the Manager take the other's CA.
func TestManagerEnsure(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	// Another replica creates the etcd CA just before this one: its create fails.
	var theirs *corev1.Secret
	client.PrependReactor("create", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Secret)
		if s.Name != EtcdCASecret || theirs != nil {
			return false, nil, nil
		}
		ca := testCA(t, "their-ca", -1, 1000)
		theirs = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: EtcdCASecret, Namespace: "ns"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{CertKey: ca.certPEM, KeyKey: ca.keyPEM, BundleKey: ca.certPEM}}
		if err := client.Tracker().Add(theirs); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, s.Name)
	})
	agg := &fakeAggregator{bundles: map[string][]byte{}}
	srv := httptest.NewServer(agg)
	defer srv.Close()
	restClient, err := rest.RESTClientFor(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{
		GroupVersion: &schema.GroupVersion{Version: "v1"}, NegotiatedSerializer: scheme.Codecs.WithoutConversion()}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := Files{Secret: ServingSecret, Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key"), Bundle: filepath.Join(dir, "ca.crt")}
	m := &Manager{Spec: Installation("ns", 3, DefaultCALife, DefaultLeafLife), Secrets: client.CoreV1().Secrets("ns"),
		Labels: map[string]string{"app.kubernetes.io/managed-by": "sidecarset-apiserver"}, Files: []Files{files},
		APIServices: []string{"v1.a", "v1.b"}, BundleOf: ServingCASecret, AggregatorREST: restClient, Now: func() time.Time { return t0 }}
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().Secrets("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*corev1.Secret{}
	for i := range list.Items {
		got[list.Items[i].Name] = &list.Items[i]
	}
	var names []string
	for n := range got {
		names = append(names, n)
	}
	want := []string{EtcdCASecret, EtcdClientSecret, EtcdPeerSecret, EtcdServerSecret, ServingSecret, ServingCASecret}
	if diff := cmp.Diff(want, names, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Fatalf("Secrets (-want +got):\n%s", diff)
	}
	// The leaves of etcd's CA are the other writer's CA's.
	for _, name := range []string{EtcdServerSecret, EtcdPeerSecret, EtcdClientSecret} {
		verify(t, name, got[name].Data[CertKey], theirs.Data[CertKey])
	}
	verify(t, ServingSecret, got[ServingSecret].Data[CertKey], got[ServingCASecret].Data[BundleKey])
	if got[ServingSecret].Labels["app.kubernetes.io/managed-by"] != "sidecarset-apiserver" || got[ServingSecret].Type != corev1.SecretTypeTLS {
		t.Errorf("Secret %s: labels %v, type %s", ServingSecret, got[ServingSecret].Labels, got[ServingSecret].Type)
	}
	for path, key := range map[string]string{files.Cert: CertKey, files.Key: KeyKey, files.Bundle: BundleKey} {
		data, err := os.ReadFile(path)
		if err != nil || string(data) != string(got[ServingSecret].Data[key]) {
			t.Errorf("%s: %v, not the Secret's %s", path, err, key)
		}
	}
	for _, as := range []string{"v1.a", "v1.b"} {
		if string(agg.bundles[as]) != string(got[ServingCASecret].Data[BundleKey]) {
			t.Errorf("APIService %s: caBundle %q, want the serving CA's bundle", as, agg.bundles[as])
		}
	}
	if l := Label(ServingSecret); m.NotAfter()[ServingSecret].IsZero() || l != "serving" {
		t.Errorf("NotAfter: %v", m.NotAfter())
	}

	// Nothing is due: no write, no patch.
	client.ClearActions()
	patches := agg.patches
	if err := m.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a second Ensure did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if agg.patches != patches {
		t.Errorf("a second Ensure patched %d APIServices", agg.patches-patches)
	}
}

func verify(t *testing.T, name string, leafPEM, bundlePEM []byte) {
	t.Helper()
	leaf, err := cert.ParseCertsPEM(leafPEM)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(bundlePEM)
	if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: roots, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		t.Errorf("%s does not verify against its CA: %v", name, err)
	}
}
