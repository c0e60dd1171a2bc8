package podfields

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
)

const (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	forbidden    = field.ErrorTypeForbidden
	duplicate    = field.ErrorTypeDuplicate
	notFound     = field.ErrorTypeNotFound
	notSupported = field.ErrorTypeNotSupported
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

// specCase mutates the pod fields of a valid SidecarSet and lists the errors validateSpec must
// return.
type specCase struct {
	name   string
	mutate func(ss *apps.SidecarSet)
	want   []wantErr
}

func runSpecCases(t *testing.T, cases []specCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ss := validSidecarSet()
			tc.mutate(ss)
			checkErrors(t, tc.want, validateSpec(&ss.Spec))
		})
	}
}

// validateSpec validates the pod fields of a SidecarSet spec in the order the SidecarSet
// validation reports them: the volumes, each container, the host ports among the containers, each
// init container.
func validateSpec(spec *apps.SidecarSetSpec) field.ErrorList {
	path := field.NewPath("spec")
	volumes, allErrs := ValidateVolumes(spec.Volumes, path.Child("volumes"))
	errs := ValidateContainers(podContainers(spec.Containers), podContainers(spec.InitContainers), volumes, path)
	for _, e := range errs.Containers {
		allErrs = append(allErrs, e...)
	}
	allErrs = append(allErrs, errs.HostPorts...)
	for _, e := range errs.InitContainers {
		allErrs = append(allErrs, e...)
	}
	return allErrs
}

func podContainers(cs []apps.SidecarContainer) []*corev1.Container {
	out := make([]*corev1.Container, len(cs))
	for i := range cs {
		out[i] = &cs[i].Container
	}
	return out
}

// validContainer returns a defaulted sidecar container whose pod fields pass validation.
func validContainer(name string) apps.SidecarContainer {
	return apps.SidecarContainer{Container: corev1.Container{
		Name:                     name,
		Image:                    "test-image:1.0",
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}}
}

// validSidecarSet returns a SidecarSet with one valid container and nothing else.
func validSidecarSet() *apps.SidecarSet {
	return &apps.SidecarSet{Spec: apps.SidecarSetSpec{Containers: []apps.SidecarContainer{validContainer("test-sidecar")}}}
}
