package certificates

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // the subject key identifier of RFC 5280 4.2.1.2, not a security hash
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Apply returns the data the step's Secret gets: what it holds (old, nil when missing) with the
// step's change, issued at now. It makes new ECDSA P-256 keys and random serial numbers.
func Apply(spec Spec, st State, step Step, old map[string][]byte, now time.Time) (map[string][]byte, error) {
	data := map[string][]byte{}
	for k, v := range old {
		data[k] = v
	}
	switch step.Action {
	case NewCA, StageCA, PromoteCA, RewriteBundle:
		ca, ok := findCA(spec, step.Secret)
		if !ok {
			return nil, fmt.Errorf("secret %s: no such CA", step.Secret)
		}
		return applyCA(spec, ca, st.CAs[step.Secret], step.Action, data, now)
	case IssueLeaf, CopyBundle:
		leaf, ok := findLeaf(spec, step.Secret)
		if !ok {
			return nil, fmt.Errorf("secret %s: no such leaf", step.Secret)
		}
		ca := st.CAs[leaf.CA]
		if ca.Current == nil {
			return nil, fmt.Errorf("secret %s: its CA %s is not usable", step.Secret, leaf.CA)
		}
		data[BundleKey] = ca.Bundle
		if step.Action == CopyBundle {
			return data, nil
		}
		certPEM, keyPEM, err := issueLeaf(leaf, ca.Current, spec.LeafLife, now)
		if err != nil {
			return nil, err
		}
		data[CertKey], data[KeyKey] = certPEM, keyPEM
		return data, nil
	}
	return nil, fmt.Errorf("secret %s: unknown action %q", step.Secret, step.Action)
}

func applyCA(spec Spec, ca CA, s CAState, action Action, data map[string][]byte, now time.Time) (map[string][]byte, error) {
	switch action {
	case NewCA:
		p, err := newCA(ca.CommonName, spec.CALife, now)
		if err != nil {
			return nil, err
		}
		// A replaced CA is no longer trusted: what it signed is issued again.
		s = CAState{Current: p}
		delete(data, NextCertKey)
		delete(data, NextKeyKey)
	case StageCA:
		p, err := newCA(ca.CommonName, spec.CALife, now)
		if err != nil {
			return nil, err
		}
		s.Next, s.NextProblem = p, ""
		data[NextCertKey], data[NextKeyKey] = p.CertPEM, p.KeyPEM
	case PromoteCA:
		s.Current, s.Problem, s.Next = s.Next, "", nil
		delete(data, NextCertKey)
		delete(data, NextKeyKey)
	}
	data[CertKey], data[KeyKey] = s.Current.CertPEM, s.Current.KeyPEM
	data[BundleKey] = DesiredBundle(s, now)
	return data, nil
}

func findCA(spec Spec, name string) (CA, bool) {
	for _, c := range spec.CAs {
		if c.Secret == name {
			return c, true
		}
	}
	return CA{}, false
}

func findLeaf(spec Spec, name string) (Leaf, bool) {
	for _, l := range spec.Leaves {
		if l.Secret == name {
			return l, true
		}
	}
	return Leaf{}, false
}

// backdate is how long before now a certificate's validity starts (clocks differ a little
// between nodes): a tenth of its life, at most a minute.
func backdate(life time.Duration) time.Duration {
	return min(time.Minute, life/10)
}

func newCA(cn string, life time.Duration, now time.Time) (*Pair, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             now.Add(-backdate(life)),
		NotAfter:              now.Add(life),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
	}
	return sign(tmpl, nil)
}

func issueLeaf(l Leaf, ca *Pair, life time.Duration, now time.Time) ([]byte, []byte, error) {
	notAfter := now.Add(life)
	if ca.Cert.NotAfter.Before(notAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: l.CommonName},
		DNSNames:  l.DNSNames,
		NotBefore: now.Add(-backdate(life)),
		NotAfter:  notAfter,
		KeyUsage:  x509.KeyUsageDigitalSignature,
	}
	for _, ip := range l.IPs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if l.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if l.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	p, err := sign(tmpl, ca)
	if err != nil {
		return nil, nil, err
	}
	return p.CertPEM, p.KeyPEM, nil
}

// sign makes a key for tmpl and signs it with ca (itself when nil).
func sign(tmpl *x509.Certificate, ca *Pair) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	id := sha1.Sum(pub) //nolint:gosec // see the import
	tmpl.SubjectKeyId = id[:]
	parent, signer := tmpl, crypto.Signer(key)
	if ca != nil {
		parent = ca.Cert
		caKey, err := keyutil.ParsePrivateKeyPEM(ca.KeyPEM)
		if err != nil {
			return nil, err
		}
		s, ok := caKey.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("the CA's key %T cannot sign", caKey)
		}
		signer = s
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return nil, err
	}
	certPEM, err := cert.EncodeCertificates(c)
	if err != nil {
		return nil, err
	}
	return &Pair{Cert: c, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}
