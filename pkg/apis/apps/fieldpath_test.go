package apps

import "testing"

func TestSplitSubscriptedPath(t *testing.T) {
	for _, tc := range []struct {
		in, path, key string
		ok            bool
	}{
		{"metadata.labels['app']", "metadata.labels", "app", true},
		{"metadata.annotations['example.com/a']", "metadata.annotations", "example.com/a", true},
		{"metadata.name", "metadata.name", "", false},
		{"['k']", "['k']", "", false},
		{"metadata.labels[app]", "metadata.labels[app]", "", false},
	} {
		path, key, ok := SplitSubscriptedPath(tc.in)
		if path != tc.path || key != tc.key || ok != tc.ok {
			t.Errorf("SplitSubscriptedPath(%q) = %q, %q, %v; want %q, %q, %v", tc.in, path, key, ok, tc.path, tc.key, tc.ok)
		}
	}
}
