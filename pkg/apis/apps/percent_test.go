package apps

import "testing"

func TestParsePercent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"25%", 25, true}, {"12.5%", 12.5, true}, {"0%", 0, true}, {"100%", 100, true}, {"25", 0, false}, {"%", 0, false}, {"x%", 0, false}} {
		got, err := ParsePercent(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePercent(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
