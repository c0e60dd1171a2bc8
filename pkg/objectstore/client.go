package objectstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Bucket is a bucket of an S3-compatible object store and how to reach it.
type Bucket struct {
	// Endpoint is the store's URL: scheme, host, port, and a path prefix if it has one
	// (https://s3.eu-west-1.amazonaws.com, http://minio.storage.svc:9000).
	Endpoint *url.URL
	// Name is the bucket's name.
	Name string
	// Region signs the requests (us-east-1 for stores without regions, such as MinIO's default).
	Region string
	// PathStyle addresses objects as Endpoint/Name/key (MinIO, Ceph and most other stores);
	// false addresses them as Name.Endpoint-host/key (virtual-hosted style, AWS's default).
	PathStyle bool
	// Credentials sign the requests.
	Credentials Credentials
	// HTTP sends the requests (its Transport holds the TLS configuration).
	HTTP *http.Client
	// Now is the signing clock.
	Now func() time.Time
}

// ObjectURL is the URL of key in the bucket, its path encoded as SigV4 signs it.
func (b *Bucket) ObjectURL(key string) *url.URL {
	u := *b.Endpoint
	base := strings.TrimSuffix(u.Path, "/")
	if b.PathStyle {
		base += "/" + b.Name
	} else {
		u.Host = b.Name + "." + u.Host
	}
	u.Path = base + "/" + key
	u.RawPath = uriEncode(u.Path, false)
	u.RawQuery, u.Fragment = "", ""
	return &u
}

// SnapshotKey names the copy of the snapshot file in the store: prefix, the file's base name
// without ".db", the time of the copy in UTC, ".db". snapshot-06.db copied at 06:00:12 on
// 2026-12-05 with prefix "prod/" is "prod/snapshot-06-20261205T060012Z.db": each copy has a key of
// its own, and keys sort by time within an hour's slot.
func SnapshotKey(prefix, file string, at time.Time) string {
	return prefix + strings.TrimSuffix(filepath.Base(file), ".db") + "-" + at.UTC().Format(amzDate) + ".db"
}

// Put uploads the file at path as key: its SHA-256 first (read once), then one signed PUT of its
// bytes. It returns the number of bytes sent.
func (b *Bucket) Put(ctx context.Context, key, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, b.ObjectURL(key).String(), io.NopCloser(f))
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	Sign(req, hex.EncodeToString(h.Sum(nil)), b.Credentials, b.Region, b.Now())
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, responseError(resp, "PUT", b.Name, key)
	}
	return size, nil
}

// Get downloads key into the file at path: into a temporary file beside it first, renamed to path
// once complete, so that path never holds part of an object. It returns the number of bytes
// written.
func (b *Bucket) Get(ctx context.Context, key, path string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.ObjectURL(key).String(), nil)
	if err != nil {
		return 0, err
	}
	Sign(req, EmptyPayloadHash, b.Credentials, b.Region, b.Now())
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, responseError(resp, "GET", b.Name, key)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".part-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	n, err := io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return 0, fmt.Errorf("GET %s/%s: %d bytes received of %d", b.Name, key, n, resp.ContentLength)
	}
	return n, os.Rename(tmp.Name(), path)
}

// responseError describes a refused request with the store's error code and message (its XML
// error body), or the start of whatever body it sent.
func responseError(resp *http.Response, method, bucket, key string) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(body, &e) == nil && e.Code != "" {
		return fmt.Errorf("%s %s/%s: %s: %s: %s", method, bucket, key, resp.Status, e.Code, e.Message)
	}
	return fmt.Errorf("%s %s/%s: %s: %s", method, bucket, key, resp.Status, strings.TrimSpace(string(body)))
}
