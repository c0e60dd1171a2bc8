package objectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPutGet sends a file to a store that keeps what it receives, reads it back, and checks what
// went over the wire: the body, its length and its SHA-256 as the signed payload hash.
func TestPutGet(t *testing.T) {
	objects := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			body, _ := io.ReadAll(r.Body)
			sum := sha256.Sum256(body)
			if r.Header.Get("X-Amz-Content-Sha256") != hex.EncodeToString(sum[:]) || r.ContentLength != int64(len(body)) {
				http.Error(w, "<Error><Code>XAmzContentSHA256Mismatch</Code><Message>bad hash</Message></Error>", http.StatusBadRequest)
				return
			}
			objects[r.URL.Path] = body
		case http.MethodGet:
			body, ok := objects[r.URL.Path]
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, "<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>")
				return
			}
			_, _ = w.Write(body)
		}
	}))
	defer srv.Close()
	endpoint, _ := url.Parse(srv.URL)
	b := &Bucket{Endpoint: endpoint, Name: "backups", Region: "us-east-1", PathStyle: true, HTTP: srv.Client(),
		Credentials: Credentials{AccessKeyID: "a", SecretAccessKey: "s"}, Now: time.Now}
	dir := t.TempDir()
	src := filepath.Join(dir, "snapshot-06.db")
	content := strings.Repeat("etcd snapshot bytes ", 10000)
	if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n, err := b.Put(ctx, "prod/snapshot-06.db", src); err != nil || n != int64(len(content)) {
		t.Fatalf("Put: %d bytes, %v", n, err)
	}
	if got := string(objects["/backups/prod/snapshot-06.db"]); got != content {
		t.Errorf("the store holds %d bytes, want the file's %d", len(got), len(content))
	}
	dst := filepath.Join(dir, "copy.db")
	if n, err := b.Get(ctx, "prod/snapshot-06.db", dst); err != nil || n != int64(len(content)) {
		t.Fatalf("Get: %d bytes, %v", n, err)
	}
	if got, err := os.ReadFile(dst); err != nil || string(got) != content {
		t.Errorf("downloaded copy: %d bytes, %v; want the file's %d", len(got), err, len(content))
	}
	_, err := b.Get(ctx, "prod/missing.db", filepath.Join(dir, "missing.db"))
	if err == nil || !strings.Contains(err.Error(), "404 Not Found: NoSuchKey: The specified key does not exist.") {
		t.Errorf("Get of a missing key: %v, want the store's NoSuchKey", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files in the folder, want the source and the copy (no partial download left)", len(entries))
	}
}
