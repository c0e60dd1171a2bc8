package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// wantErr is an expected error: its field path, its type and, optionally, a substring of the
// error message.
type wantErr struct {
	Field    string
	Type     field.ErrorType
	Contains string
}

// checkErrors compares errors by field and type, in order, then checks the message substrings.
func checkErrors(t *testing.T, want []wantErr, got field.ErrorList) {
	t.Helper()
	var gotShape, wantShape []wantErr
	for _, e := range got {
		gotShape = append(gotShape, wantErr{Field: e.Field, Type: e.Type})
	}
	for _, w := range want {
		wantShape = append(wantShape, wantErr{Field: w.Field, Type: w.Type})
	}
	if diff := cmp.Diff(wantShape, gotShape); diff != "" {
		t.Fatalf("errors (-want +got):\n%s\ngot: %v", diff, got)
	}
	for i, w := range want {
		if !strings.Contains(got[i].Error(), w.Contains) {
			t.Errorf("error %d = %q, want it to contain %q", i, got[i].Error(), w.Contains)
		}
	}
}

// newScheme returns a scheme with the apps group's defaulting and conversion.
func newScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

// decode reads a v1alpha1 SidecarSet document, defaults it and converts it to the internal type,
// as the API server does before validation.
func decode(t testing.TB, scheme *runtime.Scheme, doc []byte) *apps.SidecarSet {
	t.Helper()
	wire := &v1alpha1.SidecarSet{}
	if err := yaml.UnmarshalStrict(doc, wire); err != nil {
		t.Fatalf("decoding SidecarSet: %v", err)
	}
	scheme.Default(wire)
	out := &apps.SidecarSet{}
	if err := scheme.Convert(wire, out, nil); err != nil {
		t.Fatalf("converting SidecarSet: %v", err)
	}
	return out
}

// validContainer returns a defaulted sidecar container that passes validation.
func validContainer(name string) apps.SidecarContainer {
	return apps.SidecarContainer{
		Container: corev1.Container{
			Name:                     name,
			Image:                    "test-image:1.0",
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePath:   corev1.TerminationMessagePathDefault,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		},
		PodInjectPolicy:   apps.BeforeAppContainerType,
		UpgradeStrategy:   apps.SidecarContainerUpgradeStrategy{UpgradeType: apps.SidecarContainerColdUpgrade},
		ShareVolumePolicy: apps.ShareVolumePolicy{Type: apps.ShareVolumePolicyDisabled},
	}
}

// validSidecarSet returns a defaulted SidecarSet that passes validation.
func validSidecarSet(name string) *apps.SidecarSet {
	return &apps.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apps.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			UpdateStrategy: apps.SidecarSetUpdateStrategy{
				Type:           apps.RollingUpdateSidecarSetStrategyType,
				Partition:      ptr.To(intstr.FromInt32(0)),
				MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			},
			Containers:           []apps.SidecarContainer{validContainer("test-sidecar")},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
}
