package apps

import "testing"

func TestCanaryBase(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		base        string
		ok          bool
	}{
		{"canary", map[string]string{SidecarSetCanaryAnnotation: "true", SidecarSetBaseAnnotation: "logs"}, "logs", true},
		{"no base", map[string]string{SidecarSetCanaryAnnotation: "true"}, "", false},
		{"not true", map[string]string{SidecarSetCanaryAnnotation: "True", SidecarSetBaseAnnotation: "logs"}, "", false},
		{"base alone", map[string]string{SidecarSetBaseAnnotation: "logs"}, "", false},
		{"none", nil, "", false},
	} {
		if base, ok := CanaryBase(tc.annotations); base != tc.base || ok != tc.ok {
			t.Errorf("%s: CanaryBase = %q, %v; want %q, %v", tc.name, base, ok, tc.base, tc.ok)
		}
	}
}
