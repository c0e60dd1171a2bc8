package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/itchyny/gojq"
	corev1 "k8s.io/api/core/v1"
)

// Namespaces decodes a namespace.yaml (or common/namespace.yaml): Namespace manifests, strictly.
func Namespaces(data []byte) ([]corev1.Namespace, error) {
	var out []corev1.Namespace
	for i, doc := range SplitDocuments(data) {
		var ns corev1.Namespace
		if err := DecodeStrict(doc, &ns); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		if ns.Kind != "Namespace" || ns.Name == "" {
			return nil, fmt.Errorf("document %d: want a Namespace with a name, got kind %q name %q", i+1, ns.Kind, ns.Name)
		}
		out = append(out, ns)
	}
	return out, nil
}

// Procedure is an injection scenario's procedure.yaml: ordered steps to follow instead of applying
// sidecarsets.yaml at once. Documents with the same name are successive versions of one SidecarSet.
type Procedure struct {
	Steps []ProcedureStep `json:"steps"`
	Notes Text            `json:"notes,omitempty"`
}

// ProcedureStep is one step of a procedure.
type ProcedureStep struct {
	// Apply names the document(s) of sidecarsets.yaml to apply: prose such as "each document of
	// sidecarsets.yaml in order" (all remaining ones), "document 2" / "#2" / 2 (1-based), or any
	// other text (the next document). See Procedure.Plan.
	Apply Selector `json:"apply,omitempty"`
	// WaitFor is what to wait for after the apply (prose; the runner always waits for
	// status.observedGeneration == metadata.generation after every apply, as the README says).
	WaitFor string `json:"waitFor,omitempty"`
	// Capture stores jq results of the applied object (after settling) in variables.
	Capture Captures `json:"capture,omitempty"`
	// Substitute replaces ${VAR} in the next document before applying it.
	Substitute Substitution `json:"substitute,omitempty"`
	// CreatePod names the pod manifest to submit (pod.yaml).
	CreatePod string `json:"createPod,omitempty"`
	Name      string `json:"name,omitempty"`
	Note      Text   `json:"note,omitempty"`
	Notes     Text   `json:"notes,omitempty"`
}

// Selector is the `apply` of a procedure step: a string, or a 1-based document number.
type Selector string

// UnmarshalJSON accepts a string or a number.
func (s *Selector) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = Selector(str)
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("apply: want a string or a document number: %w", err)
	}
	*s = Selector(strconv.Itoa(n))
	return nil
}

// Capture is one variable captured from the applied object.
type Capture struct {
	Var  string `json:"var"`
	Path string `json:"path"`
}

// Captures are the variables a step captures. In YAML: a map VAR: <jq>, one {var|name, path}
// object, or a list of them.
type Captures []Capture

// UnmarshalJSON accepts the three shapes.
func (c *Captures) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	type named struct {
		Var  string `json:"var,omitempty"`
		Name string `json:"name,omitempty"`
		Path string `json:"path"`
	}
	one := func(raw []byte) (Capture, error) {
		var n named
		if err := strictJSON(raw, &n); err != nil {
			return Capture{}, err
		}
		v := n.Var
		if v == "" {
			v = n.Name
		}
		if v == "" || n.Path == "" || (n.Var != "" && n.Name != "") {
			return Capture{}, fmt.Errorf("capture: want var (or name) and path")
		}
		return Capture{Var: v, Path: n.Path}, nil
	}
	switch {
	case len(b) > 0 && b[0] == '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			return err
		}
		for _, raw := range raws {
			cp, err := one(raw)
			if err != nil {
				return err
			}
			*c = append(*c, cp)
		}
		return nil
	case len(b) > 0 && b[0] == '{':
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(b, &probe); err != nil {
			return err
		}
		_, hasPath := probe["path"]
		_, hasVar := probe["var"]
		_, hasName := probe["name"]
		if hasPath || hasVar || hasName {
			cp, err := one(b)
			if err != nil {
				return err
			}
			*c = Captures{cp}
			return nil
		}
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("capture: want VAR: <jq>, {var, path} or a list: %w", err)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			*c = append(*c, Capture{Var: k, Path: m[k]})
		}
		return nil
	}
	return fmt.Errorf("capture: want VAR: <jq>, {var, path} or a list")
}

// Substitution says which variables a step substitutes: true (all captured ones), one name, a list
// of names, or a map VAR: value of literal values.
type Substitution struct {
	All    bool
	Names  []string
	Values map[string]string
}

// UnmarshalJSON accepts the four shapes.
func (s *Substitution) UnmarshalJSON(b []byte) error {
	var all bool
	if err := json.Unmarshal(b, &all); err == nil {
		s.All = all
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		s.Names = []string{strings.TrimSuffix(strings.TrimPrefix(name, "${"), "}")}
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err == nil {
		for _, n := range names {
			s.Names = append(s.Names, strings.TrimSuffix(strings.TrimPrefix(n, "${"), "}"))
		}
		return nil
	}
	if err := json.Unmarshal(b, &s.Values); err != nil {
		return fmt.Errorf("substitute: want true, a name, a list of names or VAR: value")
	}
	return nil
}

// IsZero reports an absent substitution.
func (s Substitution) IsZero() bool { return !s.All && len(s.Names) == 0 && len(s.Values) == 0 }

// Validate checks that every step does something and captures come with an apply.
func (p Procedure) Validate() error {
	if len(p.Steps) == 0 {
		return fmt.Errorf("procedure without steps")
	}
	for i, st := range p.Steps {
		if st.Apply == "" && st.CreatePod == "" && len(st.Capture) == 0 && st.Substitute.IsZero() && st.WaitFor == "" {
			return fmt.Errorf("step %d does nothing", i+1)
		}
		for _, c := range st.Capture {
			if _, err := gojq.Parse(c.Path); err != nil {
				return fmt.Errorf("step %d: capture %s: %w", i+1, c.Var, err)
			}
		}
	}
	return nil
}

// PlannedStep is a procedure step resolved against the documents of sidecarsets.yaml.
type PlannedStep struct {
	// Documents are the 0-based indices of sidecarsets.yaml documents to apply, in order.
	Documents []int
	// Capture is evaluated on the last applied (and settled) object.
	Capture Captures
	// Substitute applies to the documents of this step and, when the step applies none, to the
	// next one applied.
	Substitute Substitution
	// CreatePod is the pod file to submit ("" for none).
	CreatePod string
}

var allDocuments = regexp.MustCompile(`(?i)\b(each|all|every|remaining)\b`)

var docNumber = regexp.MustCompile(`(?i)(?:#|\bdocument\s+|\bdoc\s+|^)(\d+)\b`)

// Plan resolves the steps against n documents: "each"/"all"/"every"/"remaining" applies every
// document not applied yet, a number N (1-based) applies document N, any other text the next one.
// Documents left unapplied when a pod is created are an error, as is applying past the end.
func (p Procedure) Plan(n int) ([]PlannedStep, error) {
	next := 0
	var out []PlannedStep
	for i, st := range p.Steps {
		ps := PlannedStep{Capture: st.Capture, Substitute: st.Substitute, CreatePod: st.CreatePod}
		if sel := strings.TrimSpace(string(st.Apply)); sel != "" {
			switch m := docNumber.FindStringSubmatch(sel); {
			case allDocuments.MatchString(sel):
				for ; next < n; next++ {
					ps.Documents = append(ps.Documents, next)
				}
			case m != nil:
				k, _ := strconv.Atoi(m[1])
				if k < 1 || k > n {
					return nil, fmt.Errorf("step %d: apply %q: sidecarsets.yaml has %d documents", i+1, sel, n)
				}
				ps.Documents = append(ps.Documents, k-1)
				if k > next {
					next = k
				}
			default:
				if next >= n {
					return nil, fmt.Errorf("step %d: apply %q: no document left in sidecarsets.yaml", i+1, sel)
				}
				ps.Documents = append(ps.Documents, next)
				next++
			}
		}
		out = append(out, ps)
	}
	return out, nil
}
