// Package objectstore_test checks the server's `snapshot upload` and `snapshot download`
// (cmd/apiserver/app, pkg/objectstore) against a local S3-compatible store, gofakes3 (fakes3),
// which verifies AWS Signature Version 4 and the signed payload hash as S3 does: its own module,
// so that gofakes3 stays out of the server's.
package objectstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/pem"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sidecarset/apiserver/cmd/apiserver/app"
	"github.com/sidecarset/apiserver/pkg/objectstore"
	"github.com/sidecarset/apiserver/test/objectstore/fakes3"
)

const (
	bucket    = "backups"
	accessKey = "sidecarset-backup"
	secretKey = "a-secret-of-forty-characters-more-or-les"
)

// startStore runs the store over TLS and returns its URL and a file holding its CA certificate.
func startStore(t *testing.T) (endpoint, caFile string) {
	t.Helper()
	handler, err := fakes3.New(bucket, accessKey, secretKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(handler)
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.crt")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	return srv.URL, caFile
}

// run runs sidecarset-apiserver with args and the environment given, and returns its output.
func run(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, env[k])
	}
	cmd := app.NewCommand(context.Background())
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

var credentials = map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": secretKey}

// TestUploadDownload uploads a snapshot-sized file with the server's command over TLS (the store's
// CA from --ca-file), reads it back with `snapshot download`, and compares the bytes.
func TestUploadDownload(t *testing.T) {
	endpoint, caFile := startStore(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "snapshot-06.db")
	content := make([]byte, 3<<20+17)
	if _, err := rand.Read(content); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--endpoint", endpoint, "--bucket", bucket, "--ca-file", caFile}
	before := time.Now().UTC().Truncate(time.Second)
	out, err := run(t, credentials, append([]string{"snapshot", "upload", src, "--prefix", "prod/a b/"}, flags...)...)
	if err != nil {
		t.Fatalf("snapshot upload: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`as (prod/a b/snapshot-06-(\d{8}T\d{6}Z)\.db)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("snapshot upload printed %q, want the key prod/a b/snapshot-06-<UTC time>.db", out)
	}
	if at, err := time.Parse("20060102T150405Z", m[2]); err != nil || at.Before(before) || at.After(time.Now()) {
		t.Errorf("the key's time %s is not the time of the upload (%v)", m[2], err)
	}
	dst := filepath.Join(dir, "restored.db")
	if out, err := run(t, credentials, append([]string{"snapshot", "download", m[1], dst}, flags...)...); err != nil {
		t.Fatalf("snapshot download: %v\n%s", err, out)
	}
	got, err := os.ReadFile(dst)
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("downloaded %d bytes (%v), want the %d uploaded", len(got), err, len(content))
	}
}

// TestStoreRefuses: what the store refuses, and how the command says so. A wrong secret and a
// body that is not what was signed are refused by the store's signature check: the client's
// signature is what the store verifies.
func TestStoreRefuses(t *testing.T) {
	endpoint, caFile := startStore(t)
	src := filepath.Join(t.TempDir(), "snapshot-00.db")
	if err := os.WriteFile(src, []byte("snapshot"), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--endpoint", endpoint, "--bucket", bucket, "--ca-file", caFile}
	wrong := map[string]string{"AWS_ACCESS_KEY_ID": accessKey, "AWS_SECRET_ACCESS_KEY": "another secret"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"wrong secret", wrong, append([]string{"snapshot", "upload", src}, flags...), "403 Forbidden: SignatureDoesNotMatch"},
		{"unknown bucket", credentials, []string{"snapshot", "upload", src, "--endpoint", endpoint, "--bucket", "other", "--ca-file", caFile}, "404 Not Found: NoSuchBucket"},
		{"missing key", credentials, append([]string{"snapshot", "download", "prod/none.db", src + ".copy"}, flags...), "404 Not Found: NoSuchKey"},
		{"untrusted certificate", credentials, []string{"snapshot", "upload", src, "--endpoint", endpoint, "--bucket", bucket}, "certificate signed by unknown authority"},
		{"no credentials", nil, append([]string{"snapshot", "upload", src}, flags...), "AWS_ACCESS_KEY_ID: required in the environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, tc.env, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v (%s), want an error with %q", tc.args, err, out, tc.want)
			}
		})
	}
}

// TestSignedPayload: the store refuses a body other than the one whose SHA-256 was signed.
func TestSignedPayload(t *testing.T) {
	handler, err := fakes3.New(bucket, accessKey, secretKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	req := httptest.NewRequest("PUT", srv.URL+"/"+bucket+"/k", strings.NewReader("other bytes"))
	req.RequestURI = ""
	objectstore.Sign(req, objectstore.EmptyPayloadHash, objectstore.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}, "us-east-1", time.Now())
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if body, _ := io.ReadAll(resp.Body); resp.StatusCode != 400 || !strings.Contains(string(body), "XAmzContentSHA256Mismatch") {
		t.Errorf("a body other than the signed payload hash's: %s %s, want 400 XAmzContentSHA256Mismatch", resp.Status, body)
	}
}
