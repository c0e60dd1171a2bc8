package validation

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// FuzzValidate decodes two SidecarSets from JSON as the API server would (defaulting included)
// and checks that no validation function panics on them.
func FuzzValidate(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "scenarios", "*", "sidecarset.yaml"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seeds: %v", err)
	}
	var seeds [][]byte
	for _, file := range files {
		data, err := yaml.YAMLToJSON(readFile(f, file))
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, data)
	}
	for i := range seeds {
		f.Add(seeds[i], seeds[(i+1)%len(seeds)], `{"rules":[{"allowedAnnotationKeyExprs":[".*"]}]}`)
	}
	scheme := newScheme(f)
	f.Fuzz(func(t *testing.T, a, b []byte, whitelist string) {
		ss, other := fuzzDecode(scheme, a), fuzzDecode(scheme, b)
		if ss == nil || other == nil {
			return
		}
		_ = ValidateSidecarSet(ss)
		_ = ValidateSidecarSetUpdate(ss, other)
		_ = ValidateSidecarSetStatusUpdate(ss, other)
		_ = ValidateConflicts(ss, []*apps.SidecarSet{other, ss, nil})
		_ = ValidateCanary(ss, other, nil)
		_ = ValidateCanary(ss, nil, errors.New("not found"))
		_ = ValidatePatchPodMetadataWhitelist(ss, &whitelist, false)
		_ = ValidatePatchPodMetadataWhitelist(ss, nil, true)
	})
}

// fuzzDecode returns the defaulted internal SidecarSet of a JSON document, nil if it is not one.
func fuzzDecode(scheme *runtime.Scheme, data []byte) *apps.SidecarSet {
	wire := &v1alpha1.SidecarSet{}
	if err := json.Unmarshal(data, wire); err != nil {
		return nil
	}
	scheme.Default(wire)
	out := &apps.SidecarSet{}
	if err := scheme.Convert(wire, out, nil); err != nil {
		return nil
	}
	return out
}
