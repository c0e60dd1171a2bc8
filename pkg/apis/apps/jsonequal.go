package apps

import (
	"bytes"
	"encoding/json"
)

// SameJSON reports whether two specs are equal as JSON, where an empty and a missing list or map
// are the same, as kube-apiserver stores them. A spec that does not marshal equals nothing.
func SameJSON(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
