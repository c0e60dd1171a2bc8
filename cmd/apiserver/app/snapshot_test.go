package app

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSnapshotOptionsValidate(t *testing.T) {
	valid := func() snapshotOptions {
		return snapshotOptions{Endpoint: "https://s3.example.com", Bucket: "b", Region: "us-east-1", Timeout: time.Minute}
	}
	for _, tc := range []struct {
		name   string
		change func(*snapshotOptions)
		want   []string
	}{
		{"valid", func(*snapshotOptions) {}, nil},
		{"http endpoint with a path", func(o *snapshotOptions) { o.Endpoint = "http://minio:9000/s3" }, nil},
		{"no endpoint", func(o *snapshotOptions) { o.Endpoint = "" }, []string{"--endpoint: required"}},
		{"not http", func(o *snapshotOptions) { o.Endpoint = "s3://bucket" }, []string{`--endpoint: "s3://bucket" is not an http or https URL with a host`}},
		{"no host", func(o *snapshotOptions) { o.Endpoint = "https:///x" }, []string{`--endpoint: "https:///x" is not an http or https URL with a host`}},
		{"query", func(o *snapshotOptions) { o.Endpoint = "https://s3.example.com/?a=b" }, []string{`--endpoint: "https://s3.example.com/?a=b" has a query, fragment or user: give scheme, host, port and path only`}},
		{"no bucket, region or timeout", func(o *snapshotOptions) { o.Bucket, o.Region, o.Timeout = "", "", 0 },
			[]string{"--bucket: required", "--region: required", "--timeout: 0s is not positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(&o)
			var got []string
			if err := o.validate(); err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSnapshotCredentials(t *testing.T) {
	env := map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "token"}
	c, err := credentials(func(k string) string { return env[k] })
	if err != nil || c.AccessKeyID != "id" || c.SecretAccessKey != "secret" || c.SessionToken != "token" {
		t.Errorf("credentials: %+v, %v", c, err)
	}
	_, err = credentials(func(string) string { return "" })
	want := "AWS_ACCESS_KEY_ID: required in the environment\nAWS_SECRET_ACCESS_KEY: required in the environment"
	if err == nil || err.Error() != want {
		t.Errorf("credentials from an empty environment: %v, want %q", err, want)
	}
}

func TestSnapshotCommandRefusesBadFlags(t *testing.T) {
	cmd := NewCommand(t.Context())
	cmd.SetArgs([]string{"snapshot", "upload", "/nonexistent.db", "--endpoint", "ftp://x", "--bucket", "b"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--endpoint:") {
		t.Errorf("snapshot upload with an ftp endpoint: %v, want an --endpoint error", err)
	}
}
