package apps

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSameJSON: empty and missing lists and maps are the same; values and unmarshalable specs
// are not.
func TestSameJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b any
		want bool
	}{
		{"equal", corev1.PodSpec{NodeName: "n"}, corev1.PodSpec{NodeName: "n"}, true},
		{"empty and missing list", corev1.PodSpec{InitContainers: []corev1.Container{}}, corev1.PodSpec{}, true},
		{"empty and missing map", corev1.PodSpec{NodeSelector: map[string]string{}}, corev1.PodSpec{}, true},
		{"different", corev1.PodSpec{NodeName: "n"}, corev1.PodSpec{NodeName: "m"}, false},
		{"both nil", nil, nil, true},
		{"unmarshalable", func() {}, func() {}, false},
	} {
		if got := SameJSON(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
