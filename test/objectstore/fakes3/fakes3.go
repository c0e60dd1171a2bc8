// Package fakes3 is an in-memory S3-compatible object store for tests: github.com/rclone/gofakes3
// with one bucket and one access key, refusing requests whose AWS Signature Version 4 does not
// verify (gofakes3's check) and, as S3 does, bodies whose SHA-256 is not the signed
// X-Amz-Content-Sha256 (this package's, which gofakes3 leaves out).
package fakes3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"
)

// New returns the store's handler, holding the empty bucket and accepting requests signed with
// accessKey and secretKey only.
func New(bucket, accessKey, secretKey string) (http.Handler, error) {
	backend := s3mem.New()
	if err := backend.CreateBucket(context.Background(), bucket); err != nil {
		return nil, err
	}
	faker := gofakes3.New(backend, gofakes3.WithV4Auth(map[string]string{accessKey: secretKey}))
	return checkPayload(faker.Server()), nil
}

// checkPayload refuses a request whose body's SHA-256 is not its X-Amz-Content-Sha256 header
// (unless the header says the payload is unsigned or streamed in signed chunks), with S3's error
// XAmzContentSHA256Mismatch.
func checkPayload(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		claimed := r.Header.Get("X-Amz-Content-Sha256")
		if claimed == "" || claimed == "UNSIGNED-PAYLOAD" || strings.HasPrefix(claimed, "STREAMING-") {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != claimed {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, "<Error><Code>XAmzContentSHA256Mismatch</Code>"+
				"<Message>The provided 'x-amz-content-sha256' header does not match what was computed.</Message></Error>")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}
