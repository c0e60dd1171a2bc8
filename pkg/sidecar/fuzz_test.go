package sidecar

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseHashMap checks that parsing never panics and that a parsed value renders to a value
// that parses to the same map (render is a fixed point after one round).
func FuzzParseHashMap(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{"a":"h"}`, `{"a":{"hash":"h","sidecarSetName":"a","sidecarList":["x"]}}`,
		`{"a":{"updateTimestamp":"2026-07-01T10:30:45Z","hash":"h","sidecarSetName":"a","sidecarList":[],"controllerRevision":"r"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseHashMap(s)
		if err != nil {
			return
		}
		once := m.String()
		std, err := json.Marshal(map[string]HashEntry(m))
		if err != nil {
			t.Fatal(err)
		}
		if once != string(std) {
			t.Fatalf("String() = %s, encoding/json = %s", once, std)
		}
		w := WorkingContainers(map[string]string{WorkingHotUpgradeContainerAnnotation: s})
		if std, _ := json.Marshal(w); RenderWorkingContainers(w) != string(std) {
			t.Fatalf("RenderWorkingContainers = %s, encoding/json = %s", RenderWorkingContainers(w), std)
		}
		m2, err := ParseHashMap(once)
		if err != nil {
			t.Fatalf("rendered value %q does not parse: %v", once, err)
		}
		if diff := cmp.Diff(once, m2.String()); diff != "" {
			t.Errorf("render not stable (-first +second):\n%s", diff)
		}
		_ = ParseInjectedList(s)
		_ = WorkingContainers(map[string]string{WorkingHotUpgradeContainerAnnotation: s})
		_, _ = ParseInPlaceUpdateStates(s)
	})
}
