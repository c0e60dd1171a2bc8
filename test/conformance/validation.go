package conformance

import (
	"fmt"
	"strings"
)

// ValidationExpect is a validation scenario's expect.yaml.
type ValidationExpect struct {
	Outcome `json:",inline"`
	// Alternative is a documented version-dependent outcome that is also acceptable.
	Alternative *Outcome `json:"alternative,omitempty"`
}

// Outcome is what creating (or updating) the SidecarSet must give.
type Outcome struct {
	Rejected bool `json:"rejected"`
	// MessageContains is a substring of the error (only with rejected).
	MessageContains string `json:"messageContains,omitempty"`
	// Stored are assertions on the stored SidecarSet (only when accepted).
	Stored Expectation `json:"stored,omitempty"`
	// When says when an alternative applies (prose).
	When  string `json:"when,omitempty"`
	Note  Text   `json:"note,omitempty"`
	Notes Text   `json:"notes,omitempty"`
}

// Validate checks that the outcome is consistent.
func (o Outcome) Validate() error {
	if o.Rejected && len(o.Stored) > 0 {
		return fmt.Errorf("stored assertions on a rejected SidecarSet")
	}
	if !o.Rejected && o.MessageContains != "" {
		return fmt.Errorf("messageContains on an accepted SidecarSet")
	}
	return o.Stored.Validate()
}

// Validate checks the main outcome and the alternative.
func (e ValidationExpect) Validate() error {
	if err := e.Outcome.Validate(); err != nil {
		return err
	}
	if e.Alternative != nil {
		if err := e.Alternative.Validate(); err != nil {
			return fmt.Errorf("alternative: %w", err)
		}
	}
	return nil
}

// Candidate is an outcome the server's answer is consistent with.
type Candidate struct {
	Outcome
	// Alternative is true for the documented alternative.
	Alternative bool
}

// Match returns the outcomes the server's answer (err == nil: accepted) matches by rejection and
// message, the main one first; when none does, the error says why the main one does not. The caller
// then takes the first candidate whose stored assertions pass.
func (e ValidationExpect) Match(err error) ([]Candidate, error) {
	var out []Candidate
	main := e.Outcome.matches(err)
	if main == nil {
		out = append(out, Candidate{Outcome: e.Outcome})
	}
	if e.Alternative != nil && e.Alternative.matches(err) == nil {
		out = append(out, Candidate{Outcome: *e.Alternative, Alternative: true})
	}
	if len(out) == 0 {
		return nil, main
	}
	return out, nil
}

func (o Outcome) matches(err error) error {
	switch {
	case o.Rejected && err == nil:
		return fmt.Errorf("want rejected, was accepted")
	case !o.Rejected && err != nil:
		return fmt.Errorf("want accepted, was rejected: %v", err)
	case o.Rejected && !strings.Contains(err.Error(), o.MessageContains):
		return fmt.Errorf("error %q does not contain %q", err.Error(), o.MessageContains)
	}
	return nil
}
