package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"

	"github.com/sidecarset/apiserver/pkg/apis/apps/fuzzer"
)

// TestRoundTripTypes fuzzes every type of the group through JSON and conversion.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, fuzzer.Funcs)
}
