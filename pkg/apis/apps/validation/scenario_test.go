package validation

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

// The scenarios in testdata/scenarios are copies of the SidecarSet admission conformance
// catalogue: each has sidecarset.yaml, optionally existing.yaml (stored objects; an update
// replaces the one of the same name), expect.yaml and meta.yaml.

type scenarioExpect struct {
	Rejected        bool   `json:"rejected"`
	MessageContains string `json:"messageContains"`
}

type scenarioMeta struct {
	Operation string   `json:"operation"`
	Requires  []string `json:"requires"`
}

// needsIO lists the scenarios whose outcome depends on a lookup these pure functions leave to the
// admission plugin; for them the test checks that nothing else rejects the object.
var needsIO = map[string]string{
	"25-revision-custom-version-not-found": "the existence of the injected revision is looked up by the admission plugin",
}

func TestConformanceScenarios(t *testing.T) {
	scheme := newScheme(t)
	whitelist := loadWhitelist(t)
	dirs, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, dir := range dirs {
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			var expect scenarioExpect
			var meta scenarioMeta
			readYAML(t, filepath.Join(dir, "expect.yaml"), &expect)
			readYAML(t, filepath.Join(dir, "meta.yaml"), &meta)
			ss := decode(t, scheme, readFile(t, filepath.Join(dir, "sidecarset.yaml")))
			stored := loadExisting(t, scheme, dir)
			var old *apps.SidecarSet
			if meta.Operation == "update" {
				old = findByName(stored, ss.Name)
				if old == nil {
					t.Fatalf("update of %s without an existing object", ss.Name)
				}
			}
			errs := admit(ss, old, stored, whitelist)
			if reason, ok := needsIO[name]; ok {
				if len(errs) > 0 {
					t.Fatalf("rejected (%v) although only the lookup should reject it: %s", errs, reason)
				}
				t.Skipf("accepted by the pure checks; %s", reason)
			}
			checkOutcome(t, expect, errs)
		})
	}
}

// admit runs the checks in the order the registry strategy and the admission plugin run them.
func admit(ss, old *apps.SidecarSet, stored []*apps.SidecarSet, whitelist *string) field.ErrorList {
	var errs field.ErrorList
	if old == nil {
		errs = ValidateSidecarSet(ss)
	} else {
		errs = ValidateSidecarSetUpdate(ss, old)
	}
	if len(errs) > 0 {
		return errs
	}
	errs = ValidatePatchPodMetadataWhitelist(ss, whitelist, false)
	if baseName, ok := IsCanary(ss); ok && baseName != ss.Name {
		base := findByName(stored, baseName)
		var baseErr error
		if base == nil {
			baseErr = errors.New("not found")
		}
		errs = append(errs, ValidateCanary(ss, base, baseErr)...)
	} else {
		errs = append(errs, ValidateCanary(ss, nil, nil)...)
	}
	if len(errs) > 0 {
		return errs
	}
	return ValidateConflicts(ss, stored)
}

func checkOutcome(t *testing.T, expect scenarioExpect, errs field.ErrorList) {
	t.Helper()
	if rejected := len(errs) > 0; rejected != expect.Rejected {
		t.Fatalf("rejected = %v, want %v; errors: %v", rejected, expect.Rejected, errs)
	}
	if msg := errs.ToAggregate(); expect.MessageContains != "" && !strings.Contains(msg.Error(), expect.MessageContains) {
		t.Errorf("message %q does not contain %q", msg.Error(), expect.MessageContains)
	}
}

// loadExisting decodes existing.yaml, whose objects must themselves be valid.
func loadExisting(t *testing.T, scheme *runtime.Scheme, dir string) []*apps.SidecarSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "existing.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []*apps.SidecarSet
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		ss := decode(t, scheme, []byte(doc))
		if errs := ValidateSidecarSet(ss); len(errs) > 0 {
			t.Fatalf("existing %s is invalid: %v", ss.Name, errs)
		}
		out = append(out, ss)
	}
	return out
}

// loadWhitelist returns the whitelist JSON of the conformance whitelist ConfigMap.
func loadWhitelist(t *testing.T) *string {
	t.Helper()
	var cm struct {
		Data map[string]string `json:"data"`
	}
	readYAML(t, filepath.Join("testdata", "patch-metadata-whitelist.yaml"), &cm)
	v, ok := cm.Data["SidecarSet_PatchPodMetadata_WhiteList"]
	if !ok {
		t.Fatal("whitelist key missing")
	}
	return &v
}

func findByName(list []*apps.SidecarSet, name string) *apps.SidecarSet {
	for _, ss := range list {
		if ss.Name == name {
			return ss
		}
	}
	return nil
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func readYAML(t *testing.T, path string, into interface{}) {
	t.Helper()
	if err := yaml.Unmarshal(readFile(t, path), into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
