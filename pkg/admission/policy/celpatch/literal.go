package celpatch

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
// (quantities, int-or-strings, times) the scalar they marshal to. kube-apiserver requires every
// list and map literal to be homogeneous: where the values of one literal differ in type, each is
// wrapped in dyn(). Only there: each dyn() is a call the type checker instantiates, and its time
// grows with the square of their number in an expression. The whole literal is made of constants,
// which kube-apiserver's CEL planner folds into one value when it compiles the policy, where a
// typed object literal (Object.spec.containers{...}) would be built and type-checked again for
// every pod. typeName is the object type of v, such as "Object.spec.containers", for errors.
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
	r := &renderer{}
	l, err := r.value(doc, reflect.TypeOf(v), typeName)
	return l.text, err
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// lit is a rendered CEL literal and its type as the type checker sees it ("string",
// "list(string)", "map(string, dyn)"; an empty list or map has a type of its own, equal to no
// other, as its element type is a fresh type parameter).
type lit struct{ text, typ string }

// renderer renders JSON values as CEL literals.
type renderer struct{ empties int }

// value renders the JSON value doc, decoded from a value of Go type t, as CEL.
func (r *renderer) value(doc any, t reflect.Type, typeName string) (lit, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch d := doc.(type) {
	case nil:
		return lit{"null", "null_type"}, nil
	case bool:
		return lit{strconv.FormatBool(d), "bool"}, nil
	case json.Number:
		if _, err := d.Int64(); err == nil {
			return lit{d.String(), "int"}, nil
		}
		f, err := d.Float64()
		if err != nil {
			return lit{}, err
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return lit{s, "double"}, nil
	case string:
		return lit{Quote(d), "string"}, nil
	case []any:
		return r.list(d, t, typeName)
	case map[string]any:
		return r.object(d, t, typeName)
	default:
		return lit{}, fmt.Errorf("unexpected JSON value %T", doc)
	}
}

func (r *renderer) list(items []any, t reflect.Type, typeName string) (lit, error) {
	if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
		return lit{}, fmt.Errorf("%s: JSON list for Go type %s", typeName, t)
	}
	elems := make([]lit, len(items))
	for i, item := range items {
		l, err := r.value(item, t.Elem(), typeName)
		if err != nil {
			return lit{}, err
		}
		elems[i] = l
	}
	texts, typ := r.homogeneous(elems)
	return lit{"[" + strings.Join(texts, ", ") + "]", "list(" + typ + ")"}, nil
}

// object renders a JSON object: the fields of a struct, or the entries of a map (or of a value
// with its own JSON form), sorted by key.
func (r *renderer) object(fields map[string]any, t reflect.Type, typeName string) (lit, error) {
	isStruct := t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(jsonMarshaler)
	var types map[string]reflect.Type
	if isStruct {
		types = jsonFields(t)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	values := make([]lit, len(keys))
	for i, k := range keys {
		ft, name := reflect.TypeOf(""), ""
		switch {
		case isStruct:
			var ok bool
			if ft, ok = types[k]; !ok {
				return lit{}, fmt.Errorf("%s: no field %q in %s", typeName, k, t)
			}
			name = typeName + "." + k
		case t.Kind() == reflect.Map:
			ft = t.Elem()
		}
		l, err := r.value(fields[k], ft, name)
		if err != nil {
			return lit{}, err
		}
		values[i] = l
	}
	texts, typ := r.homogeneous(values)
	for i, k := range keys {
		texts[i] = Quote(k) + ": " + texts[i]
	}
	return lit{"{" + strings.Join(texts, ", ") + "}", "map(string, " + typ + ")"}, nil
}

// homogeneous returns the texts of the values of one literal and their common type: when their
// types differ, each text is wrapped in dyn() and the type is dyn. The elements of an empty
// literal have a type of their own.
func (r *renderer) homogeneous(values []lit) ([]string, string) {
	texts := make([]string, len(values))
	same := true
	for i, v := range values {
		texts[i] = v.text
		same = same && v.typ == values[0].typ
	}
	switch {
	case len(values) == 0:
		r.empties++
		return texts, fmt.Sprintf("_%d", r.empties)
	case same:
		return texts, values[0].typ
	}
	for i := range texts {
		texts[i] = "dyn(" + texts[i] + ")"
	}
	return texts, "dyn"
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

// Quote renders s as a CEL string literal.
func Quote(s string) string {
	return strconv.Quote(s)
}
