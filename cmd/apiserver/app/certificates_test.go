package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/certificates"
)

func TestCertificateOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*CertificateOptions)
		want   []string
	}{
		{"defaults", func(*CertificateOptions) {}, nil},
		{"even etcd members", func(c *CertificateOptions) { c.EtcdMembers = 4 }, []string{"--certificates-etcd-members must be odd and positive, not 4"}},
		{"a CA shorter than three certificates", func(c *CertificateOptions) { c.CALife = 2 * c.LeafLife },
			[]string{"--certificates-ca-lifetime (17520h0m0s) must be at least three times --certificates-lifetime (8760h0m0s)"}},
		{"no lifetime", func(c *CertificateOptions) { c.LeafLife = 0 }, []string{"--certificates-lifetime must be positive, not 0s"}},
		{"checks too often", func(c *CertificateOptions) { c.Interval = time.Millisecond },
			[]string{"--certificates-check-interval must be at least 1s, not 1ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCertificateOptions(time.Minute, defaultAPIServices)
			tc.change(&c)
			var got []string
			for _, err := range c.validate("certificates-", time.Second) {
				got = append(got, err.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseWrites(t *testing.T) {
	got, err := parseWrites([]string{"sidecarset-etcd-server=/etc/etcd/server"})
	if err != nil {
		t.Fatal(err)
	}
	want := []certificates.Files{{Secret: "sidecarset-etcd-server", Cert: "/etc/etcd/server/tls.crt", Key: "/etc/etcd/server/tls.key", Bundle: "/etc/etcd/server/ca.crt"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseWrites (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"no-dir", "=/dir", "secret="} {
		if _, err := parseWrites([]string{bad}); err == nil || err.Error() != fmt.Sprintf("--write %q: want SECRET=DIR", bad) {
			t.Errorf("parseWrites(%q): %v", bad, err)
		}
	}
}
