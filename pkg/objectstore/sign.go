package objectstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Credentials are an access key pair, with the session token of temporary credentials.
type Credentials struct {
	// AccessKeyID names the key.
	AccessKeyID string
	// SecretAccessKey signs the requests.
	SecretAccessKey string
	// SessionToken, when set, is sent as X-Amz-Security-Token (temporary credentials).
	SessionToken string
}

// EmptyPayloadHash is the SHA-256 of an empty body, the payload hash of a GET.
const EmptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

const (
	algorithm  = "AWS4-HMAC-SHA256"
	service    = "s3"
	amzDate    = "20060102T150405Z"
	scopeDate  = "20060102"
	terminator = "aws4_request"
)

// Sign signs req for service s3 in region at now: it sets X-Amz-Date, X-Amz-Content-Sha256
// (payloadHash, the hex SHA-256 of the body), X-Amz-Security-Token for a session token, and
// Authorization. Every header req carries then is signed, with Host (req.Host, else req.URL.Host).
// The path is signed as req.URL.EscapedPath() gives it: build URLs with ObjectURL, whose paths
// are encoded as SigV4 wants.
func Sign(req *http.Request, payloadHash string, creds Credentials, region string, now time.Time) {
	now = now.UTC()
	req.Header.Set("X-Amz-Date", now.Format(amzDate))
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if creds.SessionToken != "" {
		req.Header.Set("X-Amz-Security-Token", creds.SessionToken)
	}
	names, canonical := canonicalHeaders(req)
	request := strings.Join([]string{
		req.Method,
		req.URL.EscapedPath(),
		canonicalQuery(req.URL.Query()),
		canonical,
		names,
		payloadHash,
	}, "\n")
	scope := strings.Join([]string{now.Format(scopeDate), region, service, terminator}, "/")
	toSign := strings.Join([]string{algorithm, now.Format(amzDate), scope, hexSHA256([]byte(request))}, "\n")
	key := signingKey(creds.SecretAccessKey, now.Format(scopeDate), region)
	signature := hex.EncodeToString(hmacSHA256(key, []byte(toSign)))
	req.Header.Set("Authorization", fmt.Sprintf("%s Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		algorithm, creds.AccessKeyID, scope, names, signature))
}

// canonicalHeaders returns the signed header names (lower case, sorted, joined by ';') and the
// canonical headers block (name:value lines, each value's spaces trimmed and runs of spaces
// folded, ending in a newline).
func canonicalHeaders(req *http.Request) (names, block string) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	values := map[string]string{"host": host}
	for name, vs := range req.Header {
		lower := strings.ToLower(name)
		if lower == "authorization" {
			continue
		}
		folded := make([]string, len(vs))
		for i, v := range vs {
			folded[i] = strings.Join(strings.Fields(v), " ")
		}
		values[lower] = strings.Join(folded, ",")
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + ":" + values[k] + "\n")
	}
	return strings.Join(keys, ";"), b.String()
}

// canonicalQuery is the query string sorted by name, then value, each encoded with uriEncode.
func canonicalQuery(q url.Values) string {
	pairs := make([]string, 0, len(q))
	for name, vs := range q {
		for _, v := range vs {
			pairs = append(pairs, uriEncode(name, true)+"="+uriEncode(v, true))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// uriEncode percent-encodes every byte of s except the unreserved characters A-Z, a-z, 0-9, '-',
// '.', '_' and '~' (and '/' unless encodeSlash), with upper-case hex: SigV4's URI encoding,
// stricter than url.PathEscape (which leaves '$', '!', '=' and others).
func uriEncode(s string, encodeSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		case c == '/' && !encodeSlash:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// signingKey derives the day's key for region and s3 from the secret.
func signingKey(secret, day, region string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), []byte(day))
	k = hmacSHA256(k, []byte(region))
	k = hmacSHA256(k, []byte(service))
	return hmacSHA256(k, []byte(terminator))
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

func hexSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
