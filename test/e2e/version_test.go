package e2e

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1beta1"
)

// conversionScheme converts the scenarios' v1alpha1 SidecarSets with the server's conversions.
var conversionScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

// asV1beta1 returns ss converted to v1beta1 when E2E_SIDECARSET_VERSION=v1beta1 (the scenario
// runners then write every SidecarSet at v1beta1, which the server converts back), nil otherwise.
// The conversion is the server's own, without defaults, so the server defaults and validates
// what the v1beta1 client sends.
func asV1beta1(ss *v1alpha1.SidecarSet) *v1beta1.SidecarSet {
	if os.Getenv("E2E_SIDECARSET_VERSION") != "v1beta1" {
		return nil
	}
	hub, out := &apps.SidecarSet{}, &v1beta1.SidecarSet{}
	if err := conversionScheme.Convert(ss.DeepCopy(), hub, nil); err != nil {
		panic(err)
	}
	if err := conversionScheme.Convert(hub, out, nil); err != nil {
		panic(err)
	}
	return out
}

// TestValidationConformanceAtV1beta1 runs the validation scenarios with every SidecarSet written
// at apps.kruise.io/v1beta1, converted by the server's own conversion: a v1beta1 client gets the
// same validation.
func TestValidationConformanceAtV1beta1(t *testing.T) {
	t.Setenv("E2E_SIDECARSET_VERSION", "v1beta1")
	TestValidationConformance(t)
}

// TestInjectionConformanceAtV1beta1 runs the injection scenarios (policy mode, the default) with
// every SidecarSet written at apps.kruise.io/v1beta1: a v1beta1 client gets the same pods.
func TestInjectionConformanceAtV1beta1(t *testing.T) {
	t.Setenv("E2E_SIDECARSET_VERSION", "v1beta1")
	dirs := scenarioDirs(t, "injection")
	for _, name := range sortedNames(dirs) {
		t.Run(name, func(t *testing.T) { runInjectionScenario(t, dirs[name], true) })
	}
}
