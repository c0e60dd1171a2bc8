package apiserver

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// storageCodec is the codec of the objects this server keeps in its etcd: JSON, written at
// v1alpha1 (the EncodeVersioner of the storage config says which version each kind is written at)
// and decoded to the internal types. It is the generic server's codec (Codecs.LegacyCodec) but
// for the kind of an object read from etcd, which it reads with leadingKind: the generic JSON
// serializer finds it with encoding/json, a full parse of the object before the decode proper,
// and that parse was 15% of the server's CPU while a new leader listed 50,000 SidecarSets.
func storageCodec() runtime.Codec {
	s := json.NewSerializerWithOptions(leadingKind{}, Scheme, Scheme, json.SerializerOptions{})
	return versioning.NewDefaultingCodecForScheme(Scheme, s, s, schema.GroupVersions{v1alpha1.SchemeGroupVersion}, runtime.InternalGroupVersioner)
}

// leadingKind is a json.MetaFactory for the objects this server stored: it reads apiVersion and
// kind among the object's top-level keys without parsing the values of the others, and stops
// once it has both. The server's encoder writes them first, once each. Whatever it cannot read
// so (an escaped string, a key that only matches in another case, malformed JSON) it leaves to
// json.DefaultMetaFactory.
type leadingKind struct{}

// Interpret returns the group, version and kind data declares.
func (leadingKind) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	apiVersion, kind, ok := topLevelKind(data)
	if !ok {
		return json.DefaultMetaFactory.Interpret(data)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	return &schema.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: kind}, nil
}

// topLevelKind scans the top-level keys of the JSON object data for apiVersion and kind; false
// when it cannot tell them as encoding/json would.
func topLevelKind(data []byte) (apiVersion, kind string, ok bool) {
	s := scanner{data: data}
	if !s.take('{') {
		return "", "", false
	}
	var haveVersion, haveKind bool
	for first := true; ; first = false {
		if s.take('}') {
			return apiVersion, kind, true // an object without one of them
		}
		if !first && !s.take(',') {
			return "", "", false
		}
		key, ok := s.plainString()
		if !ok || !s.take(':') {
			return "", "", false
		}
		switch {
		case key == "apiVersion" || key == "kind":
			v, ok := s.plainString()
			if !ok {
				return "", "", false
			}
			if key == "kind" {
				kind, haveKind = v, true
			} else {
				apiVersion, haveVersion = v, true
			}
			if haveKind && haveVersion {
				return apiVersion, kind, true
			}
		case strings.EqualFold(key, "apiVersion") || strings.EqualFold(key, "kind"):
			return "", "", false // encoding/json matches keys in any case
		default:
			if !s.skipValue() {
				return "", "", false
			}
		}
	}
}

// scanner reads JSON tokens from data at i, skipping whitespace before each.
type scanner struct {
	data []byte
	i    int
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// take consumes c if it comes next.
func (s *scanner) take(c byte) bool {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

// plainString consumes a string without escapes and returns it; false for any other token.
func (s *scanner) plainString() (string, bool) {
	if !s.take('"') {
		return "", false
	}
	start := s.i
	for s.i < len(s.data) {
		switch c := s.data[s.i]; {
		case c == '"':
			s.i++
			return string(s.data[start : s.i-1]), true
		case c == '\\' || c < 0x20:
			return "", false
		}
		s.i++
	}
	return "", false
}

// skipValue consumes one value: a string, an object or array (to its closing bracket), or a
// number or literal. It checks only what it needs to find the value's end; the decode proper
// checks the rest.
func (s *scanner) skipValue() bool {
	s.space()
	if s.i >= len(s.data) {
		return false
	}
	switch s.data[s.i] {
	case '"':
		return s.skipString()
	case '{', '[':
		return s.skipNested()
	}
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return true
		}
		s.i++
	}
	return false
}

// skipString consumes a string, escapes included.
func (s *scanner) skipString() bool {
	for s.i++; s.i < len(s.data); s.i++ {
		switch s.data[s.i] {
		case '\\':
			s.i++
		case '"':
			s.i++
			return true
		}
	}
	return false
}

// skipNested consumes an object or array, counting brackets outside strings.
func (s *scanner) skipNested() bool {
	depth := 0
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			if !s.skipString() {
				return false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}
