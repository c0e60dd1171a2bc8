package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// literal renders v, a Kubernetes API value (a struct of k8s.io/api), as the CEL literal of a
// MutatingAdmissionPolicy JSONPatch value whose JSON is v's JSON: structs and maps become CEL maps
// keyed by their JSON field names, lists CEL lists, and values with their own JSON form
// (quantities, int-or-strings, times) the scalar they marshal to. Every map value is wrapped in
// dyn(), which keeps the literal homogeneous for kube-apiserver's type checker: the whole literal
// is then made of constants, which kube-apiserver's CEL planner folds into one value when it
// compiles the policy, where a typed object literal (Object.spec.containers{...}) would be built
// and type-checked again for every pod. typeName is the object type of v, such as
// "Object.spec.containers", for errors.
func literal(v any, typeName string) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := writeLiteral(&b, doc, reflect.TypeOf(v), typeName); err != nil {
		return "", err
	}
	return b.String(), nil
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// writeLiteral writes the JSON value doc, decoded from a value of Go type t, as CEL.
func writeLiteral(b *strings.Builder, doc any, t reflect.Type, typeName string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch d := doc.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(d))
	case json.Number:
		if _, err := d.Int64(); err == nil {
			b.WriteString(d.String())
		} else {
			f, err := d.Float64()
			if err != nil {
				return err
			}
			s := strconv.FormatFloat(f, 'g', -1, 64)
			if !strings.ContainsAny(s, ".eE") {
				s += ".0"
			}
			b.WriteString(s)
		}
	case string:
		b.WriteString(quote(d))
	case []any:
		return writeList(b, d, t, typeName)
	case map[string]any:
		if t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(jsonMarshaler) {
			return writeObject(b, d, t, typeName)
		}
		return writeMap(b, d, t)
	default:
		return fmt.Errorf("unexpected JSON value %T", doc)
	}
	return nil
}

func writeList(b *strings.Builder, items []any, t reflect.Type, typeName string) error {
	var elem reflect.Type
	if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		elem = t.Elem()
	} else {
		return fmt.Errorf("%s: JSON list for Go type %s", typeName, t)
	}
	b.WriteByte('[')
	for i, item := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := writeLiteral(b, item, elem, typeName); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

func writeObject(b *strings.Builder, fields map[string]any, t reflect.Type, typeName string) error {
	types := jsonFields(t)
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	b.WriteByte('{')
	for i, k := range names {
		ft, ok := types[k]
		if !ok {
			return fmt.Errorf("%s: no field %q in %s", typeName, k, t)
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if err := writeEntry(b, k, fields[k], ft, typeName+"."+k); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// writeEntry writes one entry of a map literal, its value wrapped in dyn().
func writeEntry(b *strings.Builder, key string, value any, t reflect.Type, typeName string) error {
	b.WriteString(quote(key))
	b.WriteString(": dyn(")
	if err := writeLiteral(b, value, t, typeName); err != nil {
		return err
	}
	b.WriteByte(')')
	return nil
}

func writeMap(b *strings.Builder, entries map[string]any, t reflect.Type) error {
	var elem reflect.Type = reflect.TypeOf("")
	if t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := writeEntry(b, k, entries[k], elem, ""); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// jsonFields maps the JSON names of struct t's fields (inline structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range jsonFields(ft) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// quote renders s as a CEL string literal.
func quote(s string) string {
	return strconv.Quote(s)
}
