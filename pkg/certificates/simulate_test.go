package certificates

import (
	"crypto/x509"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
)

// TestRotationOverThreeCALives runs Plan and Apply every hour over three lives of a CA (90 hours,
// leaves 9 hours) from nothing, as the Manager does, and checks at every hour that:
//   - every leaf is valid and verifies against its own Secret's ca.crt and against its CA's;
//   - the CA that signs a leaf has been in the CA's trust bundle for at least 15 hours (1/6 of its
//     life), so that those who read the bundle before the switch already trust it;
//   - leaves are issued again at most every 6 hours plus the hour of the clock step (2/3 of 9),
//     except when their CA changes.
func TestRotationOverThreeCALives(t *testing.T) {
	spec := Installation("ns", 3, 90*time.Hour, 9*time.Hour)
	secrets := map[string]map[string][]byte{}
	published := map[string]time.Time{} // a CA certificate's serial: when it entered its bundle
	issued := map[string]time.Time{}
	read := func() State {
		st := State{CAs: map[string]CAState{}, Leaves: map[string]LeafState{}}
		for _, ca := range spec.CAs {
			data, ok := secrets[ca.Secret]
			st.CAs[ca.Secret] = ParseCA(data, ok)
		}
		for _, l := range spec.Leaves {
			data, ok := secrets[l.Secret]
			st.Leaves[l.Secret] = ParseLeaf(data, ok)
		}
		return st
	}
	for h := 0; h <= 270; h++ {
		now := t0.Add(time.Duration(h) * time.Hour)
		for round := 0; ; round++ {
			if round > 4 {
				t.Fatalf("hour %d: still steps after %d rounds", h, round)
			}
			st := read()
			steps := Plan(spec, st, now)
			if len(steps) == 0 {
				break
			}
			for _, s := range steps {
				data, err := Apply(spec, st, s, secrets[s.Secret], now)
				if err != nil {
					t.Fatalf("hour %d: %v: %v", h, s, err)
				}
				secrets[s.Secret] = data
				if s.Action == IssueLeaf {
					if last, ok := issued[s.Secret]; ok && now.Sub(last) < 6*time.Hour && s.Reason != "not signed by the current CA" {
						t.Errorf("hour %d: %s issued again %v after the last time (%s)", h, s.Secret, now.Sub(last), s.Reason)
					}
					issued[s.Secret] = now
				}
			}
		}
		st := read()
		for _, ca := range spec.CAs {
			certs, err := cert.ParseCertsPEM(st.CAs[ca.Secret].Bundle)
			if err != nil {
				t.Fatalf("hour %d: %s: %v", h, ca.Secret, err)
			}
			for _, c := range certs {
				if _, ok := published[c.SerialNumber.String()]; !ok {
					published[c.SerialNumber.String()] = now
				}
			}
		}
		for _, l := range spec.Leaves {
			checkLeaf(t, h, l, st, now, published)
		}
	}
}

func checkLeaf(t *testing.T, h int, l Leaf, st State, now time.Time, published map[string]time.Time) {
	t.Helper()
	leaf := st.Leaves[l.Secret]
	if leaf.Problem != "" || leaf.Pair == nil {
		t.Fatalf("hour %d: %s: %q", h, l.Secret, leaf.Problem)
	}
	for what, b := range map[string][]byte{"its own ca.crt": leaf.Bundle, "its CA's bundle": st.CAs[l.CA].Bundle} {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(b) {
			t.Fatalf("hour %d: %s: %s holds no certificate", h, l.Secret, what)
		}
		if _, err := leaf.Pair.Cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("hour %d: %s does not verify against %s: %v", h, l.Secret, what, err)
		}
	}
	signer := st.CAs[l.CA].Current.Cert
	if since := now.Sub(published[signer.SerialNumber.String()]); h > 0 && signer.NotBefore.After(t0) && since < 15*time.Hour {
		t.Errorf("hour %d: %s is signed by a CA in the bundle for %v only", h, l.Secret, since)
	}
}
