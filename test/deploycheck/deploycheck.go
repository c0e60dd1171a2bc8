// Package deploycheck checks the built deployment manifests (artifacts/deploy) for what must never
// regress: etcd reachable only over TLS, by clients and peers holding a certificate of its CA.
package deploycheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// EtcdStatefulSetName is the name of the server's etcd StatefulSet in artifacts/deploy.
const EtcdStatefulSetName = "sidecarset-etcd"

// urlFlags are etcd's flags that list URLs it listens on or advertises, each of which must be https.
var urlFlags = []string{"listen-client-urls", "advertise-client-urls", "listen-peer-urls", "initial-advertise-peer-urls"}

// requiredFlags must be set to a non-empty value.
var requiredFlags = []string{"trusted-ca-file", "peer-trusted-ca-file", "cert-file", "key-file", "peer-cert-file", "peer-key-file"}

// boolFlags are etcd's boolean flags this check reads (they take no separate value).
var boolFlags = map[string]bool{"client-cert-auth": true, "peer-client-cert-auth": true, "auto-tls": true, "peer-auto-tls": true}

// FindStatefulSet returns the StatefulSet named name in a multi-document YAML manifest (the output
// of kubectl kustomize).
func FindStatefulSet(manifest []byte, name string) (*appsv1.StatefulSet, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			return nil, fmt.Errorf("no StatefulSet %s in the manifest", name)
		}
		if err != nil {
			return nil, err
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, err
		}
		if meta.Kind != "StatefulSet" || meta.Metadata.Name != name {
			continue
		}
		var sts appsv1.StatefulSet
		if err := yaml.UnmarshalStrict(doc, &sts); err != nil {
			return nil, fmt.Errorf("StatefulSet %s: %w", name, err)
		}
		return &sts, nil
	}
}

// EtcdTLS returns every way the etcd container of sts (the container whose command or args start
// with the etcd binary) accepts or offers plaintext or unauthenticated connections: a listen or
// advertise URL for clients or peers (or an --initial-cluster peer URL) that is not https,
// --client-cert-auth or --peer-client-cert-auth not true, a trusted CA, certificate or key file
// missing, self-signed --auto-tls, or a --config-file whose content this check cannot see. Flags
// are read as etcd reads them: --flag=value, --flag value, a single dash, the last occurrence
// winning, and ETCD_* environment variables for flags not given.
func EtcdTLS(sts *appsv1.StatefulSet) error {
	c, argv := etcdContainer(sts)
	if c == nil {
		return fmt.Errorf("StatefulSet %s has no etcd container", sts.Name)
	}
	flags := parseFlags(argv)
	value := func(name string) (string, bool) {
		if v, ok := flags[name]; ok {
			return v, true
		}
		env := "ETCD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		for _, e := range c.Env {
			if e.Name == env {
				if e.ValueFrom != nil {
					return "<" + env + " from a reference>", true
				}
				return e.Value, true
			}
		}
		return "", false
	}

	var errs []error
	for _, name := range urlFlags {
		v, ok := value(name)
		if !ok || v == "" {
			errs = append(errs, fmt.Errorf("--%s is not set (etcd's default is http)", name))
			continue
		}
		errs = append(errs, httpsOnly(name, strings.Split(v, ","))...)
	}
	if v, ok := value("listen-client-http-urls"); ok && v != "" {
		errs = append(errs, httpsOnly("listen-client-http-urls", strings.Split(v, ","))...)
	}
	if v, ok := value("initial-cluster"); ok && v != "" {
		var peers []string
		for _, member := range strings.Split(v, ",") {
			_, u, found := strings.Cut(member, "=")
			if !found {
				errs = append(errs, fmt.Errorf("--initial-cluster: %q is not name=url", member))
				continue
			}
			peers = append(peers, u)
		}
		errs = append(errs, httpsOnly("initial-cluster", peers)...)
	}
	for _, name := range []string{"client-cert-auth", "peer-client-cert-auth"} {
		v, _ := value(name)
		if b, err := strconv.ParseBool(v); err != nil || !b {
			errs = append(errs, fmt.Errorf("--%s is %q, want true", name, v))
		}
	}
	for _, name := range requiredFlags {
		if v, _ := value(name); strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("--%s is not set", name))
		}
	}
	for _, name := range []string{"auto-tls", "peer-auto-tls"} {
		if v, ok := value(name); ok {
			if b, err := strconv.ParseBool(v); err != nil || b {
				errs = append(errs, fmt.Errorf("--%s=%s: certificates must come from the deployment's CA", name, v))
			}
		}
	}
	if v, ok := value("config-file"); ok && v != "" {
		errs = append(errs, fmt.Errorf("--config-file=%s: its settings cannot be checked", v))
	}
	return errors.Join(errs...)
}

func httpsOnly(flag string, urls []string) []error {
	var errs []error
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--%s: %q is not an https URL", flag, raw))
		}
	}
	return errs
}

// etcdContainer returns the container running etcd and its command line without the binary.
func etcdContainer(sts *appsv1.StatefulSet) (*corev1.Container, []string) {
	for i := range sts.Spec.Template.Spec.Containers {
		c := &sts.Spec.Template.Spec.Containers[i]
		argv := append(append([]string{}, c.Command...), c.Args...)
		if len(argv) > 0 && path.Base(argv[0]) == "etcd" {
			return c, argv[1:]
		}
	}
	return nil, nil
}

// parseFlags reads etcd's command line (Go's flag syntax): the last occurrence of a flag wins.
func parseFlags(args []string) map[string]string {
	flags := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break // etcd takes no positional arguments; Go's flag package stops here
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if n, v, ok := strings.Cut(name, "="); ok {
			flags[n] = v
			continue
		}
		if boolFlags[name] {
			flags[name] = "true"
			continue
		}
		if i+1 < len(args) {
			flags[name] = args[i+1]
			i++
		} else {
			flags[name] = ""
		}
	}
	return flags
}
