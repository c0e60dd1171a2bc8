package sidecarset_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/registry/apps/sidecarset"
)

// decodeAndValidate decodes a manifest as the server does (strict, defaults, conversion to the
// internal version) and validates it as a create; it returns what each step reports.
func decodeAndValidate(t *testing.T, scheme *runtime.Scheme, data []byte) (*apps.SidecarSet, []string) {
	t.Helper()
	codecs := serializer.NewCodecFactory(scheme, serializer.EnableStrict)
	obj, _, err := codecs.UniversalDecoder(apps.SchemeGroupVersion).Decode(data, nil, nil)
	if err != nil {
		return nil, []string{err.Error()}
	}
	ss := obj.(*apps.SidecarSet)
	strategy := sidecarset.NewStrategy(scheme)
	strategy.PrepareForCreate(context.Background(), ss)
	var errs []string
	for _, e := range strategy.Validate(context.Background(), ss) {
		errs = append(errs, e.Error())
	}
	return ss, errs
}

// TestOpenKruiseV1beta1Manifests decodes, defaults and validates every v1beta1 SidecarSet of
// OpenKruise's end-to-end tests (test/e2e/testdata/openkruise-v1beta1): each is accepted, and its
// custom version and namespace scope reach the internal object.
func TestOpenKruiseV1beta1Manifests(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	files, err := filepath.Glob("../../../../test/e2e/testdata/openkruise-v1beta1/[0-9]*.yaml")
	if err != nil || len(files) < 12 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ss, errs := decodeAndValidate(t, scheme, data)
			if len(errs) != 0 {
				t.Fatalf("rejected: %v", errs)
			}
			if ss.Spec.Namespace != "" || ss.Spec.NamespaceSelector == nil {
				t.Errorf("namespace %q, namespaceSelector %v: want the v1beta1 selector as is", ss.Spec.Namespace, ss.Spec.NamespaceSelector)
			}
		})
	}
}

// TestV1beta1Decoding checks what differs between the versions at decode and validation.
func TestV1beta1Decoding(t *testing.T) {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	tests := []struct {
		name       string
		manifest   string
		wantErrs   []string
		wantLabels map[string]string
	}{{
		name: "spec.customVersion becomes the custom version label",
		manifest: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{"name":"a"},
			"spec":{"customVersion":"v2","selector":{"matchLabels":{"a":"b"}},"containers":[{"name":"c","image":"i"}]}}`,
		wantLabels: map[string]string{v1alpha1.SidecarSetCustomVersionLabel: "v2"},
	}, {
		name: "spec.namespace is not a v1beta1 field",
		manifest: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{"name":"a"},
			"spec":{"namespace":"ns","selector":{"matchLabels":{"a":"b"}},"containers":[{"name":"c","image":"i"}]}}`,
		wantErrs: []string{`strict decoding error: unknown field "spec.namespace"`},
	}, {
		name: "v1beta1 is validated like v1alpha1",
		manifest: `{"apiVersion":"apps.kruise.io/v1beta1","kind":"SidecarSet","metadata":{"name":"a"},
			"spec":{"selector":{"matchLabels":{"a":"b"}}}}`,
		wantErrs: []string{"spec.containers: Required value: no initContainer or container defined for SidecarSet"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, errs := decodeAndValidate(t, scheme, []byte(tc.manifest))
			if diff := cmp.Diff(tc.wantErrs, errs); diff != "" {
				t.Fatalf("errors (-want +got):\n%s", diff)
			}
			if tc.wantLabels != nil {
				if diff := cmp.Diff(tc.wantLabels, ss.Labels); diff != "" {
					t.Errorf("labels (-want +got):\n%s", diff)
				}
			}
		})
	}
}
