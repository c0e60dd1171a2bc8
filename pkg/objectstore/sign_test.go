package objectstore

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The examples of AWS's SigV4 documentation for S3 ("Signature Calculations for the Authorization
// Header: Transferring Payload in a Single Chunk"): their credentials, time and signatures.
var (
	awsExampleCredentials = Credentials{AccessKeyID: "AKIAIOSFODNN7EXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	awsExampleTime        = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)
	awsExampleBucket      = &Bucket{Endpoint: &url.URL{Scheme: "https", Host: "s3.amazonaws.com"}, Name: "examplebucket"}
)

func TestSignAWSExamples(t *testing.T) {
	for _, tc := range []struct {
		name        string
		method      string
		url         string
		headers     map[string]string
		payloadHash string
		want        string
	}{{
		name:        "GET Object with a range",
		method:      http.MethodGet,
		url:         awsExampleBucket.ObjectURL("test.txt").String(),
		headers:     map[string]string{"Range": "bytes=0-9"},
		payloadHash: EmptyPayloadHash,
		want: "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
			"SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	}, {
		name:    "PUT Object, a key with $",
		method:  http.MethodPut,
		url:     awsExampleBucket.ObjectURL("test$file.text").String(),
		headers: map[string]string{"Date": "Fri, 24 May 2013 00:00:00 GMT", "X-Amz-Storage-Class": "REDUCED_REDUNDANCY"},
		// SHA-256 of "Welcome to Amazon S3."
		payloadHash: "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
		want: "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
			"SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class, Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
	}, {
		name:        "GET Bucket, a query",
		method:      http.MethodGet,
		url:         "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J",
		payloadHash: EmptyPayloadHash,
		want: "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, " +
			"SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			Sign(req, tc.payloadHash, awsExampleCredentials, "us-east-1", awsExampleTime)
			if diff := cmp.Diff(tc.want, req.Header.Get("Authorization")); diff != "" {
				t.Errorf("Authorization (-want +got):\n%s", diff)
			}
			if got := req.Header.Get("X-Amz-Date"); got != "20130524T000000Z" {
				t.Errorf("X-Amz-Date %q", got)
			}
		})
	}
}

func TestSignSessionToken(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, awsExampleBucket.ObjectURL("a").String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	creds := awsExampleCredentials
	creds.SessionToken = "token"
	Sign(req, EmptyPayloadHash, creds, "us-east-1", awsExampleTime)
	if got := req.Header.Get("X-Amz-Security-Token"); got != "token" {
		t.Errorf("X-Amz-Security-Token %q, want token", got)
	}
	if got := req.Header.Get("Authorization"); !strings.Contains(got, "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token,") {
		t.Errorf("the session token is not signed: %s", got)
	}
}

func TestURIEncode(t *testing.T) {
	for _, tc := range []struct {
		in    string
		slash bool
		want  string
	}{
		{"a b", true, "a%20b"},
		{"a+b=c&d", true, "a%2Bb%3Dc%26d"},
		{"A-z_0.9~", true, "A-z_0.9~"},
		{"a/b", false, "a/b"},
		{"a/b", true, "a%2Fb"},
		{"ü$!", false, "%C3%BC%24%21"},
	} {
		if got := uriEncode(tc.in, tc.slash); got != tc.want {
			t.Errorf("uriEncode(%q, %v) = %q, want %q", tc.in, tc.slash, got, tc.want)
		}
	}
}

func TestObjectURL(t *testing.T) {
	for _, tc := range []struct {
		endpoint  string
		pathStyle bool
		key       string
		want      string
	}{
		{"http://127.0.0.1:9000", true, "prod/snapshot-06.db", "http://127.0.0.1:9000/backups/prod/snapshot-06.db"},
		{"https://s3.eu-west-1.amazonaws.com", false, "prod/snapshot-06.db", "https://backups.s3.eu-west-1.amazonaws.com/prod/snapshot-06.db"},
		{"https://gateway.example.com/s3/", true, "a b/c$.db", "https://gateway.example.com/s3/backups/a%20b/c%24.db"},
	} {
		endpoint, err := url.Parse(tc.endpoint)
		if err != nil {
			t.Fatal(err)
		}
		b := &Bucket{Endpoint: endpoint, Name: "backups", PathStyle: tc.pathStyle}
		if got := b.ObjectURL(tc.key).String(); got != tc.want {
			t.Errorf("ObjectURL(%q) at %s, path style %v: %s, want %s", tc.key, tc.endpoint, tc.pathStyle, got, tc.want)
		}
	}
}

func TestSnapshotKey(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 0, 12, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct{ prefix, file, want string }{
		{"prod/", "/backup/snapshot-06.db", "prod/snapshot-06-20261205T060012Z.db"},
		{"", "snapshot-18.db", "snapshot-18-20261205T060012Z.db"},
		{"etcd-", "/backup/manual", "etcd-manual-20261205T060012Z.db"},
	} {
		if got := SnapshotKey(tc.prefix, tc.file, at); got != tc.want {
			t.Errorf("SnapshotKey(%q, %q) = %q, want %q", tc.prefix, tc.file, got, tc.want)
		}
	}
}
