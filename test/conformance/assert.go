package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Check is the core of a jq assertion: the program Path run on a JSON document must produce exactly
// one output equal to Equals, or (Absent) no output or null, or (Contains) one output that contains
// the value (jq `contains`; a non-array value tested against an array output means "is an element
// of"). Quantity compares Equals as Kubernetes resource quantities.
type Check struct {
	Path     string `json:"path"`
	Equals   Value  `json:"equals"`
	Absent   bool   `json:"absent,omitempty"`
	Contains Value  `json:"contains"`
	Quantity bool   `json:"quantity,omitempty"`
}

// Assertion is one item of an expect.yaml list (injection) or of `stored` (validation).
type Assertion struct {
	Check `json:",inline"`
	// Internal marks an assertion on an implementation detail of Kruise.
	Internal bool `json:"internal,omitempty"`
	// Variant names a group of mutually exclusive expectations: exactly one group must pass.
	Variant string `json:"variant,omitempty"`
	// Note is an explanation only.
	Note Text `json:"note,omitempty"`
	// Rejected, with MessageContains, is the only item of an expectation that the create fails.
	Rejected        bool   `json:"rejected,omitempty"`
	MessageContains string `json:"messageContains,omitempty"`
}

// Validate reports an assertion that says nothing or mixes exclusive kinds.
func (a Assertion) Validate() error {
	if a.Rejected {
		if a.Path != "" || a.Equals.Set || a.Absent || a.Contains.Set {
			return fmt.Errorf("a rejected item carries no path/equals/absent/contains")
		}
		return nil
	}
	if a.MessageContains != "" {
		return fmt.Errorf("messageContains without rejected: true")
	}
	return a.Check.Validate()
}

// Validate reports a check without a path or without exactly one of equals/absent/contains.
func (c Check) Validate() error {
	if c.Path == "" {
		return fmt.Errorf("assertion without path")
	}
	kinds := 0
	for _, set := range []bool{c.Equals.Set, c.Absent, c.Contains.Set} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("%s: want exactly one of equals, absent, contains", c.Path)
	}
	if _, err := gojq.Parse(c.Path); err != nil {
		return fmt.Errorf("%s: %w", c.Path, err)
	}
	return nil
}

// Evaluate runs the check on a JSON document (as decoded into interface{} values; see Normalize).
func (c Check) Evaluate(doc interface{}) error {
	outs, err := Outputs(c.Path, doc)
	if err != nil {
		return err
	}
	switch {
	case c.Absent:
		if len(outs) == 0 || (len(outs) == 1 && outs[0] == nil) {
			return nil
		}
		return fmt.Errorf("%s: want absent, got %v", c.Path, outs)
	case c.Contains.Set:
		if len(outs) != 1 || !containsValue(outs[0], Normalize(c.Contains.V)) {
			return fmt.Errorf("%s: want it to contain %v, got %v", c.Path, c.Contains.V, outs)
		}
		return nil
	}
	if len(outs) != 1 {
		return fmt.Errorf("%s: want one output equal to %v, got %v", c.Path, c.Equals.V, outs)
	}
	if c.Quantity {
		return equalQuantities(c.Path, c.Equals.V, outs[0])
	}
	if !Equal(c.Equals.V, outs[0]) {
		return fmt.Errorf("%s: want %v, got %v", c.Path, c.Equals.V, outs[0])
	}
	return nil
}

// Outputs runs a jq program on doc and returns all its outputs.
func Outputs(path string, doc interface{}) ([]interface{}, error) {
	q, err := gojq.Parse(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var outs []interface{}
	iter := q.Run(doc)
	for {
		v, ok := iter.Next()
		if !ok {
			return outs, nil
		}
		if err, isErr := v.(error); isErr {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		outs = append(outs, v)
	}
}

// EvalOne returns the single output of a jq program (nil for none, an error for several).
func EvalOne(path string, doc interface{}) (interface{}, error) {
	outs, err := Outputs(path, doc)
	switch {
	case err != nil:
		return nil, err
	case len(outs) > 1:
		return nil, fmt.Errorf("%s: %d outputs, want one", path, len(outs))
	case len(outs) == 0:
		return nil, nil
	}
	return outs[0], nil
}

// Equal is deep JSON equality; numbers compare numerically.
func Equal(a, b interface{}) bool { return reflect.DeepEqual(Normalize(a), Normalize(b)) }

// NonEmpty reports whether a JSON value is neither null nor an empty string, array or object.
func NonEmpty(v interface{}) bool {
	switch x := Normalize(v).(type) {
	case nil:
		return false
	case string:
		return x != ""
	case []interface{}:
		return len(x) > 0
	case map[string]interface{}:
		return len(x) > 0
	}
	return true
}

func containsValue(got, want interface{}) bool {
	if list, ok := got.([]interface{}); ok {
		if _, wantList := want.([]interface{}); !wantList {
			for _, v := range list {
				if Equal(v, want) {
					return true
				}
			}
			return false
		}
	}
	q, err := gojq.Parse("contains($want)")
	if err != nil {
		return false
	}
	code, err := gojq.Compile(q, gojq.WithVariables([]string{"$want"}))
	if err != nil {
		return false
	}
	v, _ := code.Run(Normalize(got), want).Next()
	return v == true
}

func equalQuantities(path string, want, got interface{}) error {
	w, err := resource.ParseQuantity(fmt.Sprint(want))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	g, err := resource.ParseQuantity(fmt.Sprint(got))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if w.Cmp(g) != 0 {
		return fmt.Errorf("%s: want quantity %s, got %s", path, w.String(), g.String())
	}
	return nil
}

// Normalize passes a value through JSON, so that Go structs, typed maps and numbers of any type
// become the generic values jq and Equal work on.
func Normalize(v interface{}) interface{} {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out interface{}
	if err := json.Unmarshal(data, &out); err != nil {
		return v
	}
	return out
}

// Expectation is the list of assertions of an injection expect.yaml.
type Expectation []Assertion

// Rejection returns the single `rejected: true` item of an expectation, if that is what it is.
func (e Expectation) Rejection() (Assertion, bool) {
	if len(e) == 1 && e[0].Rejected {
		return e[0], true
	}
	return Assertion{}, false
}

// Validate checks every item and that a rejection is the only item.
func (e Expectation) Validate() error {
	for i, a := range e {
		if err := a.Validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if a.Rejected && len(e) != 1 {
			return fmt.Errorf("item %d: rejected must be the only item", i)
		}
	}
	return nil
}

// Result is the outcome of evaluating an expectation on a document.
type Result struct {
	// Failures are the failing assertions outside variant groups.
	Failures []error
	// Variant is the one variant group that passed ("" when there are no variants).
	Variant string
	// VariantErr is set when variants exist and not exactly one group passed.
	VariantErr error
}

// Err joins every failure into one error (nil when everything passed).
func (r Result) Err() error {
	errs := append([]error(nil), r.Failures...)
	if r.VariantErr != nil {
		errs = append(errs, r.VariantErr)
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

// Evaluate runs every assertion of the expectation on doc. skipInternal leaves out `internal: true`
// assertions (a checker of an independent implementation may; this project's runners do not).
func (e Expectation) Evaluate(doc interface{}, skipInternal bool) Result {
	var r Result
	groups := map[string][]error{}
	var order []string
	for _, a := range e {
		if a.Rejected || (skipInternal && a.Internal) {
			continue
		}
		err := a.Evaluate(doc)
		if a.Variant != "" {
			if _, ok := groups[a.Variant]; !ok {
				order = append(order, a.Variant)
			}
			groups[a.Variant] = append(groups[a.Variant], err)
			continue
		}
		if err != nil {
			r.Failures = append(r.Failures, err)
		}
	}
	if len(groups) == 0 {
		return r
	}
	var passing []string
	for _, name := range order {
		ok := true
		for _, err := range groups[name] {
			ok = ok && err == nil
		}
		if ok {
			passing = append(passing, name)
		}
	}
	if len(passing) == 1 {
		r.Variant = passing[0]
		return r
	}
	var details []string
	for _, name := range order {
		details = append(details, fmt.Sprintf("%s: %v", name, errors.Join(groups[name]...)))
	}
	r.VariantErr = fmt.Errorf("want exactly one variant group to pass, %d passed (%v)", len(passing), details)
	return r
}
