// Package selectoroverlap decides, syntactically and without any objects at hand, whether two
// label selectors may select a common object. It is OpenKruise's SidecarSet conflict heuristic:
//
//	Overlap(a, b) = !(disjoint(a, b) || disjoint(b, a))
//
// disjoint(a, b) collects from a the values each key may take: matchLabels k=v gives k:{v}, an In
// requirement adds its values to k, Exists makes k take any value (a's NotIn and DoesNotExist are
// ignored). Then a and b are disjoint when some requirement of b on a collected key k contradicts
// it: matchLabels k=v or In with no value in common (unless k takes any value), NotIn excluding
// every collected value (never when k takes any value), DoesNotExist. An Exists requirement of b
// on a key that a does not collect also counts as disjoint, although an object could carry the key:
// the heuristic favours "no overlap" there, and may call overlapping selectors disjoint.
//
// A nil selector is treated as the empty selector. The one deliberate difference from OpenKruise:
// "any value" is a flag, not the literal label value "ALL", so a selector on k=ALL is not a
// wildcard.
package selectoroverlap

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Overlap reports whether a and b may select a common object (see the package comment).
func Overlap(a, b *metav1.LabelSelector) bool {
	return Prepare(a).Overlap(b)
}

// Prepared is a selector with the values it collects computed once, to be checked against many
// others (a SidecarSet write against every stored SidecarSet).
type Prepared struct {
	sel  *metav1.LabelSelector
	keys map[string]*allowed
}

// Prepare returns a, prepared.
func Prepare(a *metav1.LabelSelector) Prepared { return Prepared{sel: a, keys: collect(a)} }

// Overlap is Overlap(p's selector, b). b is checked against p's collected values first, which
// allocates nothing and settles most pairs (different values of one key).
func (p Prepared) Overlap(b *metav1.LabelSelector) bool {
	return !contradicts(p.keys, b) && !disjoint(b, p.sel)
}

// allowed is the set of values a key may take; any means every value.
type allowed struct {
	any    bool
	values map[string]bool
}

func (s allowed) has(v string) bool { return s.any || s.values[v] }

// collect returns, per key, the values sel admits according to its matchLabels, In and Exists.
func collect(sel *metav1.LabelSelector) map[string]*allowed {
	keys := map[string]*allowed{}
	get := func(k string) *allowed {
		if keys[k] == nil {
			keys[k] = &allowed{values: map[string]bool{}}
		}
		return keys[k]
	}
	if sel == nil {
		return keys
	}
	for k, v := range sel.MatchLabels {
		get(k).values[v] = true
	}
	for _, req := range sel.MatchExpressions {
		switch req.Operator {
		case metav1.LabelSelectorOpIn:
			for _, v := range req.Values {
				get(req.Key).values[v] = true
			}
		case metav1.LabelSelectorOpExists:
			get(req.Key).any = true
		}
	}
	return keys
}

// disjoint reports whether a requirement of b contradicts the values collected from a.
func disjoint(a, b *metav1.LabelSelector) bool {
	if b == nil {
		return false
	}
	return contradicts(collect(a), b)
}

// contradicts reports whether a requirement of b contradicts the values collected in keys.
func contradicts(keys map[string]*allowed, b *metav1.LabelSelector) bool {
	if b == nil {
		return false
	}
	for k, v := range b.MatchLabels {
		if s, ok := keys[k]; ok && !s.has(v) {
			return true
		}
	}
	for _, req := range b.MatchExpressions {
		s, ok := keys[req.Key]
		switch req.Operator {
		case metav1.LabelSelectorOpIn:
			if ok && !s.any && !anyIn(s, req.Values) {
				return true
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && !s.any && allExcluded(s, req.Values) {
				return true
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return true
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return true
			}
		}
	}
	return false
}

func anyIn(s *allowed, values []string) bool {
	for _, v := range values {
		if s.values[v] {
			return true
		}
	}
	return false
}

// allExcluded reports whether excluded contains every value of s.
func allExcluded(s *allowed, excluded []string) bool {
	ex := make(map[string]bool, len(excluded))
	for _, v := range excluded {
		ex[v] = true
	}
	for v := range s.values {
		if !ex[v] {
			return false
		}
	}
	return true
}

// Intersect reports whether some label set could satisfy both a and b: unlike Overlap it never
// calls overlapping selectors disjoint. It is false only when, for some key, the requirements of
// the two selectors together contradict each other: the key must be both present and absent, or
// no value is allowed by every matchLabels/In requirement and excluded by no NotIn. A nil
// selector is the empty selector, which every label set satisfies.
func Intersect(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil || (len(a.MatchExpressions) == 0 && len(b.MatchExpressions) == 0) {
		return labelsAgree(a, b)
	}
	return Gather(a).Intersects(Gather(b))
}

// labelsAgree is Intersect for selectors without expressions (or nil), without allocating: they
// intersect unless a key has different values.
func labelsAgree(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return true
	}
	small, large := a.MatchLabels, b.MatchLabels
	if len(small) > len(large) {
		small, large = large, small
	}
	for k, v := range small {
		if w, ok := large[k]; ok && w != v {
			return false
		}
	}
	return true
}

// constraint is what the requirements on one key demand together.
type constraint struct {
	present, absent bool
	allowed         map[string]bool // nil: any value
	excluded        map[string]bool
}

func constraintOf(keys map[string]*constraint, k string) *constraint {
	if keys[k] == nil {
		keys[k] = &constraint{}
	}
	return keys[k]
}

func (c *constraint) require(op metav1.LabelSelectorOperator, values []string) {
	switch op {
	case metav1.LabelSelectorOpIn:
		c.present = true
		next := map[string]bool{}
		for _, v := range values {
			if c.allowed == nil || c.allowed[v] {
				next[v] = true
			}
		}
		c.allowed = next
	case metav1.LabelSelectorOpNotIn:
		if c.excluded == nil {
			c.excluded = map[string]bool{}
		}
		for _, v := range values {
			c.excluded[v] = true
		}
	case metav1.LabelSelectorOpExists:
		c.present = true
	case metav1.LabelSelectorOpDoesNotExist:
		c.absent = true
	}
}

func (c *constraint) satisfiable() bool {
	if c.present && c.absent {
		return false
	}
	if c.allowed == nil {
		return true
	}
	for v := range c.allowed {
		if !c.excluded[v] {
			return true
		}
	}
	return false
}

// Requirements is a selector's requirements gathered per key once, for Intersect against many
// others without gathering them again for each pair.
type Requirements struct {
	sel      *metav1.LabelSelector
	hasExprs bool
	keys     map[string]*constraint
	// satisfiable is false when the selector contradicts itself on some key.
	satisfiable bool
}

// Gather returns the requirements of sel.
func Gather(sel *metav1.LabelSelector) Requirements {
	r := Requirements{sel: sel, satisfiable: true}
	if sel == nil {
		return r
	}
	r.hasExprs = len(sel.MatchExpressions) > 0
	r.keys = map[string]*constraint{}
	for k, v := range sel.MatchLabels {
		constraintOf(r.keys, k).require(metav1.LabelSelectorOpIn, []string{v})
	}
	for _, req := range sel.MatchExpressions {
		constraintOf(r.keys, req.Key).require(req.Operator, req.Values)
	}
	for _, c := range r.keys {
		if !c.satisfiable() {
			r.satisfiable = false
		}
	}
	return r
}

// Intersects is Intersect(a's selector, b's selector).
func (a Requirements) Intersects(b Requirements) bool {
	if a.sel == nil || b.sel == nil || (!a.hasExprs && !b.hasExprs) {
		return labelsAgree(a.sel, b.sel)
	}
	if !a.satisfiable || !b.satisfiable {
		return false // more requirements on a contradicting key cannot lift the contradiction
	}
	ka, kb := a.keys, b.keys
	if len(ka) > len(kb) {
		ka, kb = kb, ka
	}
	for k, ca := range ka {
		if cb, ok := kb[k]; ok && !bothSatisfiable(ca, cb) {
			return false
		}
	}
	return true
}

// bothSatisfiable reports whether one value (or absence) of a key meets the requirements of a and
// b together: constraint.satisfiable of their union, without building it.
func bothSatisfiable(a, b *constraint) bool {
	if (a.present || b.present) && (a.absent || b.absent) {
		return false
	}
	allowed, other := a.allowed, b.allowed
	if allowed == nil {
		allowed, other = other, nil
	}
	if allowed == nil {
		return true // any value but finitely many excluded
	}
	if other != nil && len(other) < len(allowed) {
		allowed, other = other, allowed
	}
	for v := range allowed {
		if (other == nil || other[v]) && !a.excluded[v] && !b.excluded[v] {
			return true
		}
	}
	return false
}
