package deploycheck

import (
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// shipped is the command line of artifacts/deploy/base/etcd.yaml (the parts this check reads).
var shipped = []string{
	"--name=$(POD_NAME)",
	"--listen-client-urls=https://$(POD_IP):2379,https://127.0.0.1:2379",
	"--advertise-client-urls=https://$(POD_NAME).sidecarset-etcd.$(POD_NAMESPACE).svc:2379",
	"--listen-peer-urls=https://$(POD_IP):2380",
	"--initial-advertise-peer-urls=https://$(POD_NAME).sidecarset-etcd.$(POD_NAMESPACE).svc:2380",
	"--initial-cluster=e0=https://e0.svc:2380,e1=https://e1.svc:2380,e2=https://e2.svc:2380",
	"--listen-metrics-urls=http://0.0.0.0:2381",
	"--client-cert-auth=true",
	"--trusted-ca-file=/etc/etcd/server/ca.crt",
	"--cert-file=/etc/etcd/server/tls.crt",
	"--key-file=/etc/etcd/server/tls.key",
	"--peer-client-cert-auth=true",
	"--peer-trusted-ca-file=/etc/etcd/peer/ca.crt",
	"--peer-cert-file=/etc/etcd/peer/tls.crt",
	"--peer-key-file=/etc/etcd/peer/tls.key",
}

// with returns the shipped flags with the flag named like change's replaced by change (or
// removed if change is "-name"), or change appended when no flag has its name.
func with(changes ...string) []string {
	args := append([]string{}, shipped...)
	for _, change := range changes {
		name, _, _ := strings.Cut(strings.TrimLeft(change, "-"), "=")
		remove := strings.HasPrefix(change, "-") && !strings.HasPrefix(change, "--")
		found := false
		for i, a := range args {
			if n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); n == name {
				found = true
				if remove {
					args = append(args[:i], args[i+1:]...)
				} else {
					args[i] = change
				}
				break
			}
		}
		if !found && !remove {
			args = append(args, change)
		}
	}
	return args
}

func sts(command []string, args []string, env ...corev1.EnvVar) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{}
	s.Name = "sidecarset-etcd"
	s.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "other", Command: []string{"sleep"}, Args: []string{"--listen-client-urls=http://x"}},
		{Name: "etcd", Command: command, Args: args, Env: env},
	}
	return s
}

func TestEtcdTLS(t *testing.T) {
	etcd := []string{"etcd"}
	for _, tc := range []struct {
		name string
		sts  *appsv1.StatefulSet
		want []string // substrings of the error; none: no error
	}{
		{name: "shipped", sts: sts(etcd, shipped)},
		{name: "flags in command, full path", sts: sts(append([]string{"/usr/local/bin/etcd"}, shipped...), nil)},
		{name: "separate values, single dashes, bare booleans", sts: sts(etcd, []string{
			"-listen-client-urls", "https://a:2379", "-advertise-client-urls", "https://a:2379",
			"--listen-peer-urls", "https://a:2380", "--initial-advertise-peer-urls", "https://a:2380",
			"--client-cert-auth", "--peer-client-cert-auth", "--trusted-ca-file", "ca", "--peer-trusted-ca-file", "ca",
			"--cert-file", "c", "--key-file", "k", "--peer-cert-file", "c", "--peer-key-file", "k"})},
		{name: "plaintext listen client URL", sts: sts(etcd, with("--listen-client-urls=http://0.0.0.0:2379")),
			want: []string{`--listen-client-urls: "http://0.0.0.0:2379"`}},
		{name: "one plaintext URL among https", sts: sts(etcd, with("--listen-client-urls=https://$(POD_IP):2379,http://127.0.0.1:2379")),
			want: []string{`"http://127.0.0.1:2379" is not an https URL`}},
		{name: "plaintext advertised client URL", sts: sts(etcd, with("--advertise-client-urls=http://e0:2379")),
			want: []string{"--advertise-client-urls"}},
		{name: "plaintext peer URL", sts: sts(etcd, with("--listen-peer-urls=http://$(POD_IP):2380")),
			want: []string{"--listen-peer-urls"}},
		{name: "plaintext advertised peer URL", sts: sts(etcd, with("--initial-advertise-peer-urls=http://e0:2380")),
			want: []string{"--initial-advertise-peer-urls"}},
		{name: "plaintext initial cluster member", sts: sts(etcd, with("--initial-cluster=e0=https://e0:2380,e1=http://e1:2380")),
			want: []string{`--initial-cluster: "http://e1:2380"`}},
		{name: "plaintext client HTTP listener", sts: sts(etcd, with("--listen-client-http-urls=http://0.0.0.0:2382")),
			want: []string{"--listen-client-http-urls"}},
		{name: "listen client URLs unset (etcd's default is http)", sts: sts(etcd, with("-listen-client-urls")),
			want: []string{"--listen-client-urls is not set"}},
		{name: "https overridden by a later http", sts: sts(etcd, append(with(), "--listen-peer-urls=http://a:2380")),
			want: []string{"--listen-peer-urls"}},
		{name: "client cert auth missing", sts: sts(etcd, with("-client-cert-auth")),
			want: []string{`--client-cert-auth is ""`}},
		{name: "client cert auth false", sts: sts(etcd, with("--client-cert-auth=false")),
			want: []string{`--client-cert-auth is "false"`}},
		{name: "peer client cert auth false", sts: sts(etcd, with("--peer-client-cert-auth=false")),
			want: []string{"--peer-client-cert-auth"}},
		{name: "trusted CA missing", sts: sts(etcd, with("-trusted-ca-file")),
			want: []string{"--trusted-ca-file is not set"}},
		{name: "peer trusted CA empty", sts: sts(etcd, with("--peer-trusted-ca-file=")),
			want: []string{"--peer-trusted-ca-file is not set"}},
		{name: "key file missing", sts: sts(etcd, with("-peer-key-file")),
			want: []string{"--peer-key-file is not set"}},
		{name: "auto TLS", sts: sts(etcd, with("--peer-auto-tls")),
			want: []string{"--peer-auto-tls=true"}},
		{name: "config file", sts: sts(etcd, with("--config-file=/etc/etcd.yaml")),
			want: []string{"--config-file"}},
		{name: "plaintext URL from the environment", sts: sts(etcd, with("-listen-client-urls"),
			corev1.EnvVar{Name: "ETCD_LISTEN_CLIENT_URLS", Value: "http://0.0.0.0:2379"}),
			want: []string{`--listen-client-urls: "http://0.0.0.0:2379"`}},
		{name: "client cert auth from the environment", sts: sts(etcd, with("-client-cert-auth"),
			corev1.EnvVar{Name: "ETCD_CLIENT_CERT_AUTH", Value: "true"})},
		{name: "flag wins over the environment", sts: sts(etcd, shipped,
			corev1.EnvVar{Name: "ETCD_LISTEN_PEER_URLS", Value: "http://0.0.0.0:2380"})},
		{name: "no etcd container", sts: sts([]string{"sh", "-c", "etcd"}, shipped),
			want: []string{"no etcd container"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := EtcdTLS(tc.sts)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFindStatefulSet(t *testing.T) {
	manifest := []byte(`apiVersion: v1
kind: Service
metadata: {name: sidecarset-etcd}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: other}
spec: {replicas: 1}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: sidecarset-etcd}
spec:
  replicas: 3
  template:
    spec:
      containers:
      - {name: etcd, command: [etcd], args: [--client-cert-auth=true]}
`)
	s, err := FindStatefulSet(manifest, EtcdStatefulSetName)
	if err != nil {
		t.Fatal(err)
	}
	if *s.Spec.Replicas != 3 || s.Spec.Template.Spec.Containers[0].Args[0] != "--client-cert-auth=true" {
		t.Errorf("found %+v", s.Spec)
	}
	if _, err := FindStatefulSet(manifest, "missing"); err == nil {
		t.Error("no error for a missing StatefulSet")
	}
	if _, err := FindStatefulSet([]byte("kind: StatefulSet\nmetadata: {name: x}\nspec: {replicas: many}\n"), "x"); err == nil {
		t.Error("no error for an invalid StatefulSet")
	}
}

// TestShippedEtcd checks the StatefulSet of artifacts/deploy/base as rendered from the chart by
// hack/render-deploy.sh (test/chart checks the chart's with other values, the end-to-end test
// TestDeployManifests as kustomize builds it).
func TestShippedEtcd(t *testing.T) {
	manifest, err := os.ReadFile("../../artifacts/deploy/base/etcd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := FindStatefulSet(manifest, EtcdStatefulSetName)
	if err != nil {
		t.Fatal(err)
	}
	if err := EtcdTLS(s); err != nil {
		t.Error(err)
	}
}
