package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/test/integration/framework"
)

// TestManualExamples creates every SidecarSet of the user manual (artifacts/examples) as written.
func TestManualExamples(t *testing.T) {
	s := framework.StartServer(t)
	ctx := context.Background()
	files, err := filepath.Glob("../../artifacts/examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ss := &v1alpha1.SidecarSet{}
			if err := yaml.UnmarshalStrict(raw, ss); err != nil {
				t.Fatalf("decode: %v", err)
			}
			got, err := s.Client.AppsV1alpha1().SidecarSets().Create(ctx, ss, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() {
				_ = s.Client.AppsV1alpha1().SidecarSets().Delete(ctx, got.Name, metav1.DeleteOptions{})
			})
			if got.Spec.UpdateStrategy.Type == "" || got.Spec.RevisionHistoryLimit == nil {
				t.Errorf("defaults missing: %+v", got.Spec.UpdateStrategy)
			}
		})
	}
}
