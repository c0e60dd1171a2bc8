package install

import (
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apitestingfuzzer "k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/fuzzer"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
)

const fuzzIterations = 2000

// newFuzzer returns the group's API fuzzer over a scheme with every version installed.
func newFuzzer(t *testing.T, seed int64) (*runtime.Scheme, *randfill.Filler) {
	t.Helper()
	scheme := runtime.NewScheme()
	Install(scheme)
	codecs := runtimeserializer.NewCodecFactory(scheme)
	funcs := apitestingfuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, fuzzer.Funcs)
	return scheme, apitestingfuzzer.FuzzerFor(funcs, rand.NewSource(seed), codecs)
}

// convert converts in into a new object of out's type through the scheme, as the server does.
func convert[O any](t *testing.T, scheme *runtime.Scheme, in any, out *O) *O {
	t.Helper()
	if err := scheme.Convert(in, out, nil); err != nil {
		t.Fatalf("convert %T to %T: %v", in, out, err)
	}
	return out
}

// overWire passes a v1beta1 SidecarSet through its JSON form and decode-time defaults, as a client
// reading and writing it back does.
func overWire(t *testing.T, in *v1beta1.SidecarSet) *v1beta1.SidecarSet {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := &v1beta1.SidecarSet{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	v1beta1.SetObjectDefaults_SidecarSet(out)
	return out
}

// sometimes returns v with probability 1/2, otherwise "", and whether it returned v.
func sometimes(r *rand.Rand, v string) (string, bool) {
	if r.Intn(2) == 0 {
		return v, true
	}
	return "", false
}

func setKey(m *map[string]string, key, value string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[key] = value
}

// TestRoundTripV1alpha1ThroughV1beta1 fuzzes v1alpha1 SidecarSets and checks that
// v1alpha1 -> internal -> v1beta1 (and its JSON) -> internal -> v1alpha1 gives back the object. The
// fuzzer is steered into the fields whose shape differs: spec.namespace with and without a
// namespaceSelector, and the custom version label (also empty) with and without the v1beta1-label
// annotation.
func TestRoundTripV1alpha1ThroughV1beta1(t *testing.T) {
	scheme, f := newFuzzer(t, 1)
	r := rand.New(rand.NewSource(2))
	for i := 0; i < fuzzIterations; i++ {
		internal := &apps.SidecarSet{}
		f.Fill(internal)
		if ns, ok := sometimes(r, internal.Spec.Namespace); ok {
			internal.Spec.Namespace = ns
		}
		if r.Intn(2) == 0 {
			internal.Spec.NamespaceSelector = nil
		}
		switch r.Intn(3) { // a custom version, an empty one (the label is there), none
		case 0:
			setKey(&internal.Labels, v1alpha1.SidecarSetCustomVersionLabel, "v"+internal.Name)
		case 1:
			setKey(&internal.Labels, v1alpha1.SidecarSetCustomVersionLabel, "")
		}
		if v, ok := sometimes(r, "label-"+internal.Name); ok {
			setKey(&internal.Annotations, v1beta1.CustomVersionLabelAnnotation, v)
		}
		original := convert(t, scheme, internal, &v1alpha1.SidecarSet{})

		hub := convert(t, scheme, original, &apps.SidecarSet{})
		beta := overWire(t, convert(t, scheme, hub, &v1beta1.SidecarSet{}))
		back := convert(t, scheme, convert(t, scheme, beta, &apps.SidecarSet{}), &v1alpha1.SidecarSet{})

		if !apiequality.Semantic.DeepEqual(original, back) {
			t.Fatalf("iteration %d: v1alpha1 round trip through v1beta1 lost data (-want +got):\n%s", i,
				cmp.Diff(original, back, cmpopts.EquateEmpty()))
		}
	}
}

// TestRoundTripV1beta1ThroughV1alpha1 fuzzes v1beta1 SidecarSets and checks that
// v1beta1 -> internal -> v1alpha1 -> internal -> v1beta1 gives back the object, including
// namespace selectors on kubernetes.io/metadata.name, spec.customVersion and an
// apps.kruise.io/sidecarset-custom-version label that v1beta1 treats as a plain label.
func TestRoundTripV1beta1ThroughV1alpha1(t *testing.T) {
	scheme, f := newFuzzer(t, 3)
	r := rand.New(rand.NewSource(4))
	for i := 0; i < fuzzIterations; i++ {
		internal := &apps.SidecarSet{}
		f.Fill(internal)
		original := convert(t, scheme, internal, &v1beta1.SidecarSet{})
		original.Spec.CustomVersion, _ = sometimes(r, "cv-"+internal.Name)
		if v, ok := sometimes(r, "label-"+internal.Name); ok {
			setKey(&original.Labels, v1alpha1.SidecarSetCustomVersionLabel, v)
		}
		switch r.Intn(3) {
		case 0:
			original.Spec.NamespaceSelector = apps.NamespaceSelector("ns-"+internal.Name, nil)
		case 1:
			original.Spec.NamespaceSelector = nil
		}
		original = overWire(t, original)

		hub := convert(t, scheme, original, &apps.SidecarSet{})
		alpha := convert(t, scheme, hub, &v1alpha1.SidecarSet{})
		back := convert(t, scheme, convert(t, scheme, alpha, &apps.SidecarSet{}), &v1beta1.SidecarSet{})

		if !apiequality.Semantic.DeepEqual(original, back) {
			t.Fatalf("iteration %d: v1beta1 round trip through v1alpha1 lost data (-want +got):\n%s", i,
				cmp.Diff(original, back, cmpopts.EquateEmpty()))
		}
	}
}
