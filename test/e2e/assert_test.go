package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"
)

// assertion is one item of a conformance expect.yaml.
type assertion struct {
	Path     string      `json:"path"`
	Equals   interface{} `json:"equals"`
	Absent   bool        `json:"absent"`
	Contains interface{} `json:"contains"`
	Quantity bool        `json:"quantity"`
	Variant  string      `json:"variant"`
	Internal bool        `json:"internal"`
	// Rejected, with MessageContains, is the only item of an expectation that the create fails.
	Rejected        bool   `json:"rejected"`
	MessageContains string `json:"messageContains"`
}

// check evaluates the assertion on a JSON document (decoded into interface{} values).
func (a assertion) check(doc interface{}) error {
	outs, err := a.outputs(doc)
	if err != nil {
		return err
	}
	switch {
	case a.Absent:
		if len(outs) == 0 || (len(outs) == 1 && outs[0] == nil) {
			return nil
		}
		return fmt.Errorf("%s: want absent, got %v", a.Path, outs)
	case a.Contains != nil:
		if len(outs) != 1 || !contains(outs[0], normalize(a.Contains)) {
			return fmt.Errorf("%s: want it to contain %v, got %v", a.Path, a.Contains, outs)
		}
		return nil
	}
	if len(outs) != 1 {
		return fmt.Errorf("%s: want one output equal to %v, got %v", a.Path, a.Equals, outs)
	}
	if a.Quantity {
		return equalQuantities(a.Path, a.Equals, outs[0])
	}
	if !reflect.DeepEqual(normalize(a.Equals), normalize(outs[0])) {
		return fmt.Errorf("%s: want %v, got %v", a.Path, a.Equals, outs[0])
	}
	return nil
}

// outputs runs the assertion's jq program on doc.
func (a assertion) outputs(doc interface{}) ([]interface{}, error) {
	q, err := gojq.Parse(a.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Path, err)
	}
	var outs []interface{}
	iter := q.Run(doc)
	for {
		v, ok := iter.Next()
		if !ok {
			return outs, nil
		}
		if err, isErr := v.(error); isErr {
			return nil, fmt.Errorf("%s: %w", a.Path, err)
		}
		outs = append(outs, v)
	}
}

func contains(got, want interface{}) bool {
	if list, ok := got.([]interface{}); ok {
		if _, wantList := want.([]interface{}); !wantList {
			for _, v := range list {
				if reflect.DeepEqual(normalize(v), want) {
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
	v, _ := code.Run(normalize(got), want).Next()
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

// normalize makes numbers comparable by passing a value through JSON.
func normalize(v interface{}) interface{} {
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

// readYAML decodes a YAML file into out; a missing file leaves out untouched.
func readYAML(path string, out interface{}) error {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, out)
}

func yamlToJSON(y string) ([]byte, error) { return yaml.YAMLToJSON([]byte(y)) }
