// Package certificates keeps the installation's own certificates (certificates.source=self-managed):
// two CAs (etcd's, which etcd trusts for clients and peers, and the serving CA, the APIServices'
// caBundle) and the leaves they sign (etcd's server, peer and client certificates, the server's
// serving certificate), each in a Secret of the server's namespace.
//
// Plan is the pure core: given what the Secrets hold and the clock, it says which Secret to
// create or rewrite and why. A leaf is issued when it is missing, unusable, not signed by its CA's
// current certificate, names other hosts than it should, or has lived 2/3 of its life. A CA is
// replaced in stages so that whoever trusts it has the next one before it signs anything: at 2/3
// of its life a next CA joins the trust bundle (ca.crt) while the current one keeps signing; at
// 5/6 the next one becomes current (every leaf is then issued again by it); the old one stays in
// the bundle until it expires. A CA that is missing, unusable or expired is replaced at once.
// CA steps come alone: leaves are planned against the CAs as stored, once no CA step is left.
//
// Issue (issue.go) makes the Secret data a step calls for; Manager (manager.go) reads and writes
// the Secrets, with create (AlreadyExists: another replica won, read again) and updates with
// resourceVersion preconditions, so that replicas and etcd's pods agree without a leader.
package certificates

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"time"

	"k8s.io/client-go/util/cert"
)

// Keys of the Secrets' data: kubernetes.io/tls Secrets with the trust bundle as ca.crt. A CA's
// Secret also holds its staged successor as next.crt and next.key.
const (
	CertKey     = "tls.crt"
	KeyKey      = "tls.key"
	BundleKey   = "ca.crt"
	NextCertKey = "next.crt"
	NextKeyKey  = "next.key"
)

// CA is a certificate authority the installation keeps.
type CA struct {
	// Secret is the name of the Secret that holds it.
	Secret     string
	CommonName string
}

// Leaf is a certificate a CA of the installation signs.
type Leaf struct {
	// Secret is the name of the Secret that holds it; CA the name of its CA's Secret.
	Secret, CA string
	CommonName string
	DNSNames   []string
	IPs        []string
	// Server and Client are its extended key usages.
	Server, Client bool
}

// Spec is everything the installation needs.
type Spec struct {
	CAs    []CA
	Leaves []Leaf
	// CALife and LeafLife are how long a new CA and a new leaf are valid (a leaf no longer than
	// its CA).
	CALife, LeafLife time.Duration
}

// Pair is a certificate and its private key as stored.
type Pair struct {
	Cert            *x509.Certificate
	CertPEM, KeyPEM []byte
}

// CAState is what a CA's Secret holds; Problem says why it cannot be used as it is.
type CAState struct {
	Exists bool
	// Current signs; Next is the staged successor, nil if none.
	Current, Next *Pair
	// Bundle is ca.crt as stored.
	Bundle []byte
	// Problem: why Current is unusable ("" when usable); NextProblem the same for Next.
	Problem, NextProblem string
}

// LeafState is what a leaf's Secret holds.
type LeafState struct {
	Exists bool
	Pair   *Pair
	Bundle []byte
	// Problem: why Pair is unusable ("" when usable).
	Problem string
}

// State is what every Secret of the Spec holds, by Secret name (absent: no such Secret).
type State struct {
	CAs    map[string]CAState
	Leaves map[string]LeafState
}

// Action is what a Step does to a Secret.
type Action string

// The actions of a Step.
const (
	// NewCA creates the CA's Secret, or replaces an unusable or expired CA at once.
	NewCA Action = "new-ca"
	// StageCA puts a next CA into the Secret and the trust bundle; the current one keeps signing.
	StageCA Action = "stage-ca"
	// PromoteCA makes the staged CA the current one; the old one stays in the bundle.
	PromoteCA Action = "promote-ca"
	// RewriteBundle writes the CA's trust bundle as it should be (an old CA expired).
	RewriteBundle Action = "rewrite-bundle"
	// IssueLeaf issues a leaf (a new key and certificate) with its CA's current certificate.
	IssueLeaf Action = "issue"
	// CopyBundle writes the CA's trust bundle into the leaf's Secret (its ca.crt).
	CopyBundle Action = "copy-bundle"
)

// Step is one write Plan calls for.
type Step struct {
	Secret string
	Action Action
	Reason string
}

// Fractions of a certificate's life: a leaf is issued again, and a CA's successor staged, at
// renewAt; the successor becomes current at promoteAt.
const (
	renewNum, renewDen     = 2, 3
	promoteNum, promoteDen = 5, 6
)

// at returns the moment num/den of c's life has passed.
func at(c *x509.Certificate, num, den int64) time.Time {
	life := c.NotAfter.Sub(c.NotBefore)
	return c.NotBefore.Add(life / time.Duration(den) * time.Duration(num))
}

// RenewAt is when Plan replaces a leaf, or stages a CA's successor: 2/3 of its life.
func RenewAt(c *x509.Certificate) time.Time { return at(c, renewNum, renewDen) }

// PromoteAt is when Plan makes a CA's staged successor current: 5/6 of its life.
func PromoteAt(c *x509.Certificate) time.Time { return at(c, promoteNum, promoteDen) }

// Plan returns the writes that bring the Secrets to what spec needs at now: the CAs' steps if
// any CA needs one, else the leaves'; nil when nothing is to be done.
func Plan(spec Spec, st State, now time.Time) []Step {
	var steps []Step
	for _, ca := range spec.CAs {
		if s, ok := planCA(ca, st.CAs[ca.Secret], now); ok {
			steps = append(steps, s)
		}
	}
	if len(steps) > 0 {
		return steps
	}
	for _, l := range spec.Leaves {
		if s, ok := planLeaf(l, st.Leaves[l.Secret], st.CAs[l.CA], now); ok {
			steps = append(steps, s)
		}
	}
	return steps
}

func planCA(ca CA, s CAState, now time.Time) (Step, bool) {
	step := func(a Action, why string) (Step, bool) { return Step{Secret: ca.Secret, Action: a, Reason: why}, true }
	switch {
	case !s.Exists:
		return step(NewCA, "missing")
	case s.Problem != "" && s.Next != nil && s.NextProblem == "" && validAt(s.Next.Cert, now):
		return step(PromoteCA, "current CA unusable: "+s.Problem)
	case s.Problem != "":
		return step(NewCA, s.Problem)
	case !now.Before(s.Current.Cert.NotAfter):
		if s.Next != nil && s.NextProblem == "" && validAt(s.Next.Cert, now) {
			return step(PromoteCA, "current CA expired")
		}
		return step(NewCA, "expired")
	case s.Next != nil && s.NextProblem == "" && !now.Before(PromoteAt(s.Current.Cert)):
		return step(PromoteCA, "5/6 of the current CA's life has passed")
	case (s.Next == nil || s.NextProblem != "") && !now.Before(RenewAt(s.Current.Cert)):
		why := "2/3 of the current CA's life has passed"
		if s.NextProblem != "" {
			why += "; staged CA unusable: " + s.NextProblem
		}
		return step(StageCA, why)
	case !bytes.Equal(s.Bundle, DesiredBundle(s, now)):
		return step(RewriteBundle, "trust bundle out of date")
	}
	return Step{}, false
}

func planLeaf(l Leaf, s LeafState, ca CAState, now time.Time) (Step, bool) {
	step := func(a Action, why string) (Step, bool) { return Step{Secret: l.Secret, Action: a, Reason: why}, true }
	switch {
	case ca.Current == nil:
		return Step{}, false // its CA is not kept here: nothing can sign it
	case !s.Exists:
		return step(IssueLeaf, "missing")
	case s.Problem != "":
		return step(IssueLeaf, s.Problem)
	case s.Pair.Cert.CheckSignatureFrom(ca.Current.Cert) != nil:
		return step(IssueLeaf, "not signed by the current CA")
	case !now.Before(RenewAt(s.Pair.Cert)):
		return step(IssueLeaf, "2/3 of its life has passed")
	case !sameNames(l, s.Pair.Cert):
		return step(IssueLeaf, "names changed")
	case !bytes.Equal(s.Bundle, ca.Bundle):
		return step(CopyBundle, "CA's trust bundle changed")
	}
	return Step{}, false
}

func validAt(c *x509.Certificate, now time.Time) bool {
	return !now.Before(c.NotBefore) && now.Before(c.NotAfter)
}

// sameNames: the certificate names the leaf's common name, DNS names and IP addresses.
func sameNames(l Leaf, c *x509.Certificate) bool {
	ips := make([]string, len(c.IPAddresses))
	for i, ip := range c.IPAddresses {
		ips[i] = ip.String()
	}
	want := make([]string, len(l.IPs))
	for i, ip := range l.IPs {
		want[i] = net.ParseIP(ip).String()
	}
	return c.Subject.CommonName == l.CommonName && sameSet(c.DNSNames, l.DNSNames) && sameSet(ips, want)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// DesiredBundle is the trust bundle a CA's Secret should hold at now: its current certificate,
// its staged successor, then the certificates of the stored bundle that are neither and have not
// expired (CAs it replaced, still trusted for the leaves they signed), in PEM.
func DesiredBundle(s CAState, now time.Time) []byte {
	var out []*x509.Certificate
	add := func(c *x509.Certificate) {
		for _, o := range out {
			if o.Equal(c) {
				return
			}
		}
		out = append(out, c)
	}
	if s.Current != nil {
		add(s.Current.Cert)
	}
	if s.Next != nil && s.NextProblem == "" {
		add(s.Next.Cert)
	}
	if old, err := cert.ParseCertsPEM(s.Bundle); err == nil {
		for _, c := range old {
			if now.Before(c.NotAfter) {
				add(c)
			}
		}
	}
	pemBytes, _ := cert.EncodeCertificates(out...) // cannot fail: certificates parsed or made here
	return pemBytes
}

// ParseCA reads a CA's Secret data (nil: no Secret).
func ParseCA(data map[string][]byte, exists bool) CAState {
	s := CAState{Exists: exists, Bundle: data[BundleKey]}
	if !exists {
		return s
	}
	s.Current, s.Problem = parsePair(data[CertKey], data[KeyKey], true)
	if len(data[NextCertKey]) > 0 || len(data[NextKeyKey]) > 0 {
		s.Next, s.NextProblem = parsePair(data[NextCertKey], data[NextKeyKey], true)
	}
	return s
}

// ParseLeaf reads a leaf's Secret data.
func ParseLeaf(data map[string][]byte, exists bool) LeafState {
	s := LeafState{Exists: exists, Bundle: data[BundleKey]}
	if exists {
		s.Pair, s.Problem = parsePair(data[CertKey], data[KeyKey], false)
	}
	return s
}

// parsePair parses a certificate and its key; the problem says why they are unusable.
func parsePair(certPEM, keyPEM []byte, isCA bool) (*Pair, string) {
	certs, err := cert.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, "certificate unreadable: " + err.Error()
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, "key unusable: " + err.Error()
	}
	if isCA && !certs[0].IsCA {
		return nil, "not a CA certificate"
	}
	return &Pair{Cert: certs[0], CertPEM: certPEM, KeyPEM: keyPEM}, ""
}
