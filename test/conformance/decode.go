package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeStrict decodes one YAML (or JSON) document into out, rejecting unknown and duplicate
// fields. Field names match case-sensitively, as in the Kubernetes API (encoding/json would accept
// `sameUidAsSetUp` for `sameUidAsSetup`).
func DecodeStrict(data []byte, out interface{}) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	return strictJSON(j, out)
}

// ReadStrict decodes the YAML file at path into out strictly. A missing file is not an error when
// optional is true: out is left untouched and found is false.
func ReadStrict(path string, optional bool, out interface{}) (found bool, err error) {
	data, err := os.ReadFile(path)
	if optional && os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := DecodeStrict(data, out); err != nil {
		return true, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}

// SplitDocuments splits a multi-document YAML stream on "---" separator lines and drops empty
// documents (a leading "---" is common in the scenario files).
func SplitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	flush := func() {
		doc := strings.Join(cur, "\n")
		cur = nil
		if strings.TrimSpace(stripComments(doc)) != "" {
			docs = append(docs, []byte(doc+"\n"))
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" || strings.HasPrefix(line, "--- ") {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Object is a Kubernetes manifest (or a merge patch) embedded in a scenario, kept as JSON.
type Object json.RawMessage

// UnmarshalJSON keeps the raw JSON; null stays unset.
func (o *Object) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*o = nil
		return nil
	}
	*o = append((*o)[:0], b...)
	return nil
}

// MarshalJSON returns the raw JSON (null when unset).
func (o Object) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("null"), nil
	}
	return o, nil
}

// Set reports whether the manifest was given.
func (o Object) Set() bool { return len(o) > 0 }

// Value is a JSON value given in a scenario (`equals: ...`); unlike interface{} it tells an
// explicit `null` apart from a missing field.
type Value struct {
	Set bool
	V   interface{}
}

// UnmarshalJSON records the value, null included.
func (v *Value) UnmarshalJSON(b []byte) error {
	v.Set = true
	return json.Unmarshal(b, &v.V)
}

// MarshalJSON renders the value.
func (v Value) MarshalJSON() ([]byte, error) { return json.Marshal(v.V) }

// V returns a set Value holding x (for tests and builders).
func V(x interface{}) Value { return Value{Set: true, V: Normalize(x)} }

// Text is prose (notes): a string or a list of strings.
type Text string

// UnmarshalJSON accepts a string or a list of strings (joined with newlines); other scalars (YAML
// reads a bare `yes` or `1.5` as a bool or a number) are kept as they read.
func (t *Text) UnmarshalJSON(b []byte) error {
	var v interface{}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case nil:
		*t = ""
	case string:
		*t = Text(x)
	case []interface{}:
		parts := make([]string, len(x))
		for i, p := range x {
			s, ok := p.(string)
			if !ok {
				s = strings.TrimSpace(string(mustJSON(p)))
			}
			parts[i] = s
		}
		*t = Text(strings.Join(parts, "\n"))
	case map[string]interface{}:
		return fmt.Errorf("notes: want a string or a list of strings, got an object")
	default:
		*t = Text(mustJSON(x))
	}
	return nil
}

func mustJSON(v interface{}) []byte {
	b, _ := json.Marshal(v)
	return b
}

// strictJSON decodes JSON into out, case-sensitively, rejecting unknown and duplicate fields (also
// used by the custom unmarshalers, which a strict decoder does not reach into).
func strictJSON(b []byte, out interface{}) error {
	strict, err := kjson.UnmarshalStrict(b, out)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// OneOrMany is a field documented as one object that a scenario may also give as a list.
type OneOrMany[T any] []T

// UnmarshalJSON accepts one T or a list of T, strictly.
func (m *OneOrMany[T]) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*m = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var list []T
		if err := strictJSON(b, &list); err != nil {
			return err
		}
		*m = list
		return nil
	}
	var one T
	if err := strictJSON(b, &one); err != nil {
		return err
	}
	*m = []T{one}
	return nil
}
