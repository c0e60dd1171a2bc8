package certificates

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// Files are where a Secret's certificate, key and trust bundle are written (an empty path: not
// written).
type Files struct {
	Secret            string
	Cert, Key, Bundle string
}

// Manager keeps the Secrets of a Spec in one namespace, writes some of them into files and fills
// the caBundle of APIServices: what certificates ensure and the server with
// --self-managed-certificates run.
type Manager struct {
	Spec Spec
	// Secrets are the Secrets of the namespace.
	Secrets corev1client.SecretInterface
	// Labels go on every Secret the Manager creates.
	Labels map[string]string
	// Files are written after every round, when their content changed.
	Files []Files
	// APIServices get the trust bundle of the CA Secret BundleOf as their caBundle, through
	// AggregatorREST (a REST client of kube-apiserver); none when empty.
	APIServices    []string
	BundleOf       string
	AggregatorREST rest.Interface
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	notAfter map[string]time.Time // by Secret name: what the last round read
}

// maxRounds bounds the reads and writes of one Ensure: each round that lost a race with another
// writer (AlreadyExists, Conflict) reads again.
const maxRounds = 8

// Ensure reads the Secrets, writes what Plan calls for until nothing is left, then the files and
// the APIServices' caBundle.
func (m *Manager) Ensure(ctx context.Context) error {
	var (
		secrets map[string]*corev1.Secret
		st      State
		err     error
	)
	for round := 0; ; round++ {
		if round == maxRounds {
			return fmt.Errorf("the certificates' Secrets still changed after %d rounds", maxRounds)
		}
		if secrets, st, err = m.read(ctx); err != nil {
			return err
		}
		steps := Plan(m.Spec, st, m.now())
		if len(steps) == 0 {
			break
		}
		if err := m.apply(ctx, secrets, st, steps); err != nil {
			return err
		}
	}
	m.record(st)
	if err := m.writeFiles(secrets); err != nil {
		return err
	}
	return m.patchAPIServices(ctx, secrets[m.BundleOf])
}

// Run runs Ensure every interval until ctx ends, logging its errors.
func (m *Manager) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := m.Ensure(ctx); err != nil {
			klog.ErrorS(err, "keeping the certificates")
		}
	}, interval)
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// read gets every Secret of the Spec (nil: missing) and parses them.
func (m *Manager) read(ctx context.Context) (map[string]*corev1.Secret, State, error) {
	secrets := map[string]*corev1.Secret{}
	st := State{CAs: map[string]CAState{}, Leaves: map[string]LeafState{}}
	get := func(name string) (map[string][]byte, bool, error) {
		s, err := m.Secrets.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("reading Secret %s: %w", name, err)
		}
		secrets[name] = s
		return s.Data, true, nil
	}
	for _, ca := range m.Spec.CAs {
		data, ok, err := get(ca.Secret)
		if err != nil {
			return nil, st, err
		}
		st.CAs[ca.Secret] = ParseCA(data, ok)
	}
	for _, l := range m.Spec.Leaves {
		data, ok, err := get(l.Secret)
		if err != nil {
			return nil, st, err
		}
		st.Leaves[l.Secret] = ParseLeaf(data, ok)
	}
	return secrets, st, nil
}

// apply writes the steps; it stops at the first write another writer got in before (the next
// round reads what it wrote).
func (m *Manager) apply(ctx context.Context, secrets map[string]*corev1.Secret, st State, steps []Step) error {
	for _, step := range steps {
		old := secrets[step.Secret]
		var oldData map[string][]byte
		if old != nil {
			oldData = old.Data
		}
		data, err := Apply(m.Spec, st, step, oldData, m.now())
		if err != nil {
			return err
		}
		if old == nil {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: step.Secret, Labels: m.Labels}, Type: corev1.SecretTypeTLS, Data: data}
			_, err = m.Secrets.Create(ctx, s, metav1.CreateOptions{})
		} else {
			s := old.DeepCopy() // keeps the resourceVersion: an update after another writer's fails
			s.Data = data
			_, err = m.Secrets.Update(ctx, s, metav1.UpdateOptions{})
		}
		if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
			klog.V(2).InfoS("another writer changed a certificate Secret first; reading again", "secret", step.Secret)
			return nil
		}
		if err != nil {
			return fmt.Errorf("writing Secret %s (%s: %s): %w", step.Secret, step.Action, step.Reason, err)
		}
		klog.InfoS("certificate Secret written", "secret", step.Secret, "action", step.Action, "reason", step.Reason)
	}
	return nil
}

// record keeps when each certificate expires, for NotAfter.
func (m *Manager) record(st State) {
	na := map[string]time.Time{}
	for name, s := range st.CAs {
		if s.Current != nil {
			na[name] = s.Current.Cert.NotAfter
		}
	}
	for name, s := range st.Leaves {
		if s.Pair != nil {
			na[name] = s.Pair.Cert.NotAfter
		}
	}
	m.mu.Lock()
	m.notAfter = na
	m.mu.Unlock()
}

// NotAfter returns when the certificate of each Secret (a CA's current one) expires, as the last
// Ensure read them.
func (m *Manager) NotAfter() map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]time.Time, len(m.notAfter))
	for k, v := range m.notAfter {
		out[k] = v
	}
	return out
}

// writeFiles writes each Files entry from its Secret: the key before the certificate, so that a
// reader that sees the new certificate finds its key (k8s.io/apiserver's serving certificate
// reloads on either and checks that they match).
func (m *Manager) writeFiles(secrets map[string]*corev1.Secret) error {
	for _, f := range m.Files {
		s := secrets[f.Secret]
		if s == nil {
			return fmt.Errorf("secret %s is missing", f.Secret)
		}
		for _, w := range []struct{ path, key string }{{f.Key, KeyKey}, {f.Cert, CertKey}, {f.Bundle, BundleKey}} {
			if w.path == "" {
				continue
			}
			if err := writeIfChanged(w.path, s.Data[w.key]); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeIfChanged replaces the file at once (a rename) when its content differs.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// patchAPIServices sets each APIService's caBundle to the CA Secret's trust bundle where it
// differs.
func (m *Manager) patchAPIServices(ctx context.Context, ca *corev1.Secret) error {
	if len(m.APIServices) == 0 || m.AggregatorREST == nil {
		return nil
	}
	if ca == nil {
		return fmt.Errorf("secret %s is missing", m.BundleOf)
	}
	bundle := ca.Data[BundleKey]
	if _, err := cert.ParseCertsPEM(bundle); err != nil {
		return fmt.Errorf("secret %s: %s: %w", m.BundleOf, BundleKey, err)
	}
	for _, name := range m.APIServices {
		raw, err := m.AggregatorREST.Get().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", name).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("reading APIService %s: %w", name, err)
		}
		var as struct {
			Spec struct {
				CABundle []byte `json:"caBundle"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &as); err != nil {
			return fmt.Errorf("reading APIService %s: %w", name, err)
		}
		if bytes.Equal(as.Spec.CABundle, bundle) {
			continue
		}
		patch := fmt.Sprintf(`{"spec":{"caBundle":%q}}`, base64.StdEncoding.EncodeToString(bundle))
		if err := m.AggregatorREST.Patch(types.MergePatchType).AbsPath("/apis/apiregistration.k8s.io/v1/apiservices", name).
			Body([]byte(patch)).Do(ctx).Error(); err != nil {
			return fmt.Errorf("setting the caBundle of APIService %s: %w", name, err)
		}
		klog.InfoS("APIService caBundle set", "apiservice", name)
	}
	return nil
}
