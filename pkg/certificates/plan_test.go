package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/util/keyutil"
)

// t0 is the fake clock's origin; every fixture's validity is given in hours from it.
var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func hours(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }

// fixture is a certificate made by the test itself, valid from hours from to hours to.
type fixture struct {
	cert    *x509.Certificate
	certPEM []byte
	keyPEM  []byte
	key     *ecdsa.PrivateKey
}

func makeCert(t *testing.T, tmpl *x509.Certificate, parent *fixture) fixture {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	p, signer := tmpl, key
	if parent != nil {
		p, signer = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{cert: c, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM: keyPEM, key: key}
}

func testCA(t *testing.T, cn string, from, to float64) fixture {
	return makeCert(t, &x509.Certificate{Subject: pkix.Name{CommonName: cn}, NotBefore: hours(from), NotAfter: hours(to),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil)
}

func testLeaf(t *testing.T, l Leaf, ca fixture, from, to float64) fixture {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: l.CommonName}, DNSNames: l.DNSNames, NotBefore: hours(from), NotAfter: hours(to)}
	for _, ip := range l.IPs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	return makeCert(t, tmpl, &ca)
}

func bundle(fs ...fixture) []byte {
	var out []byte
	for _, f := range fs {
		out = append(out, f.certPEM...)
	}
	return out
}

// spec is a small installation: one CA, two leaves.
var spec = Spec{
	CAs: []CA{{Secret: "ca", CommonName: "test-ca"}},
	Leaves: []Leaf{
		{Secret: "server", CA: "ca", CommonName: "server", DNSNames: []string{"a.ns.svc", "b.ns.svc"}, IPs: []string{"127.0.0.1"}, Server: true},
		{Secret: "client", CA: "ca", CommonName: "client", Client: true},
	},
	CALife: 90 * time.Hour, LeafLife: 9 * time.Hour,
}

func caState(current *fixture, next *fixture, b []byte) CAState {
	data := map[string][]byte{BundleKey: b}
	if current != nil {
		data[CertKey], data[KeyKey] = current.certPEM, current.keyPEM
	}
	if next != nil {
		data[NextCertKey], data[NextKeyKey] = next.certPEM, next.keyPEM
	}
	return ParseCA(data, true)
}

func leafState(f fixture, b []byte) LeafState {
	return ParseLeaf(map[string][]byte{CertKey: f.certPEM, KeyKey: f.keyPEM, BundleKey: b}, true)
}

// TestPlan: what Plan writes, given the Secrets' contents and the clock. The CA fixture lives from
// hour 0 to hour 90 (2/3 at hour 60, 5/6 at hour 75); the leaves from hour 0 to hour 9 (2/3 at 6).
func TestPlan(t *testing.T) {
	ca := testCA(t, "test-ca", 0, 90)
	next := testCA(t, "test-ca", 60, 150)
	old := testCA(t, "test-ca", -60, 30)
	other := testCA(t, "other-ca", 0, 90)
	server, client := spec.Leaves[0], spec.Leaves[1]
	okServer := testLeaf(t, server, ca, 0, 9)
	okClient := testLeaf(t, client, ca, 0, 9)
	oneCA := caState(&ca, nil, bundle(ca))
	leaves := func(s, c LeafState) map[string]LeafState { return map[string]LeafState{"server": s, "client": c} }
	fresh := leaves(leafState(okServer, bundle(ca)), leafState(okClient, bundle(ca)))
	mismatched := okServer
	mismatched.keyPEM = okClient.keyPEM
	renamed := server
	renamed.DNSNames = []string{"a.ns.svc", "b.ns.svc", "c.ns.svc"}

	for _, tc := range []struct {
		name  string
		cas   map[string]CAState
		leafs map[string]LeafState
		now   float64
		want  []Step
	}{
		{name: "nothing stored: the CA first, alone", now: 1,
			want: []Step{{Secret: "ca", Action: NewCA, Reason: "missing"}}},
		{name: "the CA stored, no leaf", cas: map[string]CAState{"ca": oneCA}, now: 1,
			want: []Step{{Secret: "server", Action: IssueLeaf, Reason: "missing"}, {Secret: "client", Action: IssueLeaf, Reason: "missing"}}},
		{name: "everything current", cas: map[string]CAState{"ca": oneCA}, leafs: fresh, now: 5.9},
		{name: "leaves at 2/3 of their life", cas: map[string]CAState{"ca": oneCA}, leafs: fresh, now: 6,
			want: []Step{{Secret: "server", Action: IssueLeaf, Reason: "2/3 of its life has passed"}, {Secret: "client", Action: IssueLeaf, Reason: "2/3 of its life has passed"}}},
		{name: "a leaf signed by another CA", cas: map[string]CAState{"ca": oneCA}, now: 1,
			leafs: leaves(leafState(testLeaf(t, server, other, 0, 9), bundle(ca)), leafState(okClient, bundle(ca))),
			want:  []Step{{Secret: "server", Action: IssueLeaf, Reason: "not signed by the current CA"}}},
		{name: "a leaf whose names changed (another etcd member)", cas: map[string]CAState{"ca": oneCA}, now: 1,
			leafs: leaves(leafState(testLeaf(t, renamed, ca, 0, 9), bundle(ca)), leafState(okClient, bundle(ca))),
			want:  []Step{{Secret: "server", Action: IssueLeaf, Reason: "names changed"}}},
		{name: "a leaf whose key is not its certificate's", cas: map[string]CAState{"ca": oneCA}, now: 1,
			leafs: leaves(leafState(mismatched, bundle(ca)), leafState(okClient, bundle(ca))),
			want:  []Step{{Secret: "server", Action: IssueLeaf, Reason: "key unusable: tls: private key does not match public key"}}},
		{name: "a leaf with an old trust bundle", cas: map[string]CAState{"ca": oneCA}, now: 1,
			leafs: leaves(leafState(okServer, bundle(old)), leafState(okClient, bundle(ca))),
			want:  []Step{{Secret: "server", Action: CopyBundle, Reason: "CA's trust bundle changed"}}},
		{name: "the CA just before 2/3 of its life", cas: map[string]CAState{"ca": oneCA}, leafs: fresh, now: 59.9,
			want: []Step{{Secret: "server", Action: IssueLeaf, Reason: "2/3 of its life has passed"}, {Secret: "client", Action: IssueLeaf, Reason: "2/3 of its life has passed"}}},
		{name: "the CA at 2/3 of its life: a successor staged, leaves wait", cas: map[string]CAState{"ca": oneCA}, now: 60,
			want: []Step{{Secret: "ca", Action: StageCA, Reason: "2/3 of the current CA's life has passed"}}},
		{name: "a successor staged and in the bundle: the current CA still signs", now: 74.9,
			cas:   map[string]CAState{"ca": caState(&ca, &next, bundle(ca, next))},
			leafs: leaves(leafState(testLeaf(t, server, ca, 70, 79), bundle(ca, next)), leafState(testLeaf(t, client, ca, 70, 79), bundle(ca, next)))},
		{name: "the CA at 5/6 of its life: the successor promoted", now: 75,
			cas:  map[string]CAState{"ca": caState(&ca, &next, bundle(ca, next))},
			want: []Step{{Secret: "ca", Action: PromoteCA, Reason: "5/6 of the current CA's life has passed"}}},
		{name: "promoted: leaves of the old CA issued again", now: 76,
			cas:   map[string]CAState{"ca": caState(&next, nil, bundle(next, ca))},
			leafs: leaves(leafState(testLeaf(t, server, ca, 70, 79), bundle(next, ca)), leafState(testLeaf(t, client, next, 75, 84), bundle(next, ca))),
			want:  []Step{{Secret: "server", Action: IssueLeaf, Reason: "not signed by the current CA"}}},
		{name: "an old CA expired: dropped from the bundle", now: 31,
			cas:  map[string]CAState{"ca": caState(&ca, nil, bundle(ca, old))},
			want: []Step{{Secret: "ca", Action: RewriteBundle, Reason: "trust bundle out of date"}}},
		{name: "the CA expired, nothing staged (the server was down): replaced", now: 95,
			cas:  map[string]CAState{"ca": oneCA},
			want: []Step{{Secret: "ca", Action: NewCA, Reason: "expired"}}},
		{name: "the CA expired with a successor staged: promoted", now: 95,
			cas:  map[string]CAState{"ca": caState(&ca, &next, bundle(ca, next))},
			want: []Step{{Secret: "ca", Action: PromoteCA, Reason: "current CA expired"}}},
		{name: "an unreadable CA", now: 1,
			cas:  map[string]CAState{"ca": ParseCA(map[string][]byte{CertKey: []byte("junk"), KeyKey: ca.keyPEM}, true)},
			want: []Step{{Secret: "ca", Action: NewCA, Reason: "certificate unreadable: data does not contain any valid RSA or ECDSA certificates"}}},
		{name: "a CA Secret holding a leaf", now: 1,
			cas:  map[string]CAState{"ca": ParseCA(map[string][]byte{CertKey: okServer.certPEM, KeyKey: okServer.keyPEM}, true)},
			want: []Step{{Secret: "ca", Action: NewCA, Reason: "not a CA certificate"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := State{CAs: map[string]CAState{}, Leaves: map[string]LeafState{}}
			for k, v := range tc.cas {
				st.CAs[k] = v
			}
			for k, v := range tc.leafs {
				st.Leaves[k] = v
			}
			got := Plan(spec, st, hours(tc.now))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}
