package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCatalogueDecodes decodes every scenario of the published catalogue and of this project's
// extra one strictly and validates it: a field the README does not document, or a malformed one,
// fails here without a cluster.
func TestCatalogueDecodes(t *testing.T) {
	roots := []string{"../e2e/testdata/conformance", "../e2e/testdata/extra-conformance"}
	counts := map[string]int{}
	for _, root := range roots {
		for _, kind := range []string{"injection", "validation", "rollout"} {
			dirs, err := filepath.Glob(filepath.Join(root, kind, "*"))
			if err != nil {
				t.Fatal(err)
			}
			for _, dir := range dirs {
				counts[kind]++
				t.Run(filepath.Join(filepath.Base(root), kind, filepath.Base(dir)), func(t *testing.T) {
					if err := decodeScenario(kind, dir); err != nil {
						t.Error(err)
					}
				})
			}
		}
	}
	for _, kind := range []string{"injection", "validation", "rollout"} {
		if counts[kind] == 0 {
			t.Errorf("no %s scenarios found", kind)
		}
	}
}

func decodeScenario(kind, dir string) error {
	must := func(name string, optional bool, out interface{}) (bool, error) {
		return ReadStrict(filepath.Join(dir, name), optional, out)
	}
	switch kind {
	case "rollout":
		var sc Scenario
		if _, err := must("scenario.yaml", false, &sc); err != nil {
			return err
		}
		return sc.Validate()
	case "validation":
		var meta Meta
		var want ValidationExpect
		if _, err := must("meta.yaml", false, &meta); err != nil {
			return err
		}
		if _, err := must("expect.yaml", false, &want); err != nil {
			return err
		}
		if err := meta.Validate(); err != nil {
			return err
		}
		if meta.Operation == "" {
			return errorf("%s: meta.operation missing", dir)
		}
		return want.Validate()
	}
	var meta Meta
	var expect Expectation
	var proc Procedure
	if _, err := must("meta.yaml", false, &meta); err != nil {
		return err
	}
	if _, err := must("expect.yaml", false, &expect); err != nil {
		return err
	}
	if err := meta.Validate(); err != nil {
		return err
	}
	if err := expect.Validate(); err != nil {
		return err
	}
	if data, err := os.ReadFile(filepath.Join(dir, "namespace.yaml")); err == nil {
		if _, err := Namespaces(data); err != nil {
			return err
		}
	}
	found, err := must("procedure.yaml", true, &proc)
	if err != nil || !found {
		return err
	}
	if err := proc.Validate(); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, "sidecarsets.yaml"))
	if err != nil {
		return err
	}
	_, err = proc.Plan(len(SplitDocuments(data)))
	return err
}

func errorf(format string, args ...interface{}) error { return fmt.Errorf(format, args...) }
