package apps

import (
	"bytes"
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/equality"
)

// SameJSON reports whether two specs are equal as JSON, where an empty and a missing list or map
// are the same, as kube-apiserver stores them. A spec that does not marshal equals nothing.
// Semantically equal specs (equality.Semantic, which also holds empty and missing lists and maps
// the same) are equal without being marshalled: the planner compares every policy it owns on
// every pass, most of them unchanged, and marshalling them took most of a pass.
func SameJSON(a, b any) bool {
	if equality.Semantic.DeepEqual(a, b) {
		return true
	}
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
