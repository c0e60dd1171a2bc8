package apps

import "strings"

// SplitSubscriptedPath splits a downward API field path "path['key']" into path and key, as
// Kubernetes' fieldpath package does (ok false, and fieldPath whole, when it has no subscript):
// the one reading of metadata.labels['k'] and metadata.annotations['k'] that validation and
// injection share.
func SplitSubscriptedPath(fieldPath string) (path, key string, ok bool) {
	if !strings.HasSuffix(fieldPath, "']") {
		return fieldPath, "", false
	}
	path, key, found := strings.Cut(strings.TrimSuffix(fieldPath, "']"), "['")
	if !found || path == "" {
		return fieldPath, "", false
	}
	return path, key, true
}
