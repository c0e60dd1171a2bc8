// Package fuzzer holds the fuzzer functions of the apps.kruise.io round-trip tests. A fuzzed object
// is first made a fixed point of decode-time defaulting and of core/v1's own JSON form (nil versus
// empty lists, fields core/v1 defaults while decoding), so the round trip checks this group's
// conversions and serialization rather than core/v1's.
package fuzzer

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/conversion"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Funcs returns the fuzzer functions of the apps.kruise.io group.
var Funcs = func(runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(ss *apps.SidecarSet, c randfill.Continue) {
			c.FillNoCustom(ss)
			wire := &v1alpha1.SidecarSet{}
			normalize(ss, wire, v1alpha1.Convert_apps_SidecarSet_To_v1alpha1_SidecarSet,
				v1alpha1.Convert_v1alpha1_SidecarSet_To_apps_SidecarSet, func() { v1alpha1.SetObjectDefaults_SidecarSet(wire) })
		},
		func(n *apps.NamespacedSidecarSet, c randfill.Continue) {
			c.FillNoCustom(n)
			wire := &v1alpha1.NamespacedSidecarSet{}
			normalize(n, wire, v1alpha1.Convert_apps_NamespacedSidecarSet_To_v1alpha1_NamespacedSidecarSet,
				v1alpha1.Convert_v1alpha1_NamespacedSidecarSet_To_apps_NamespacedSidecarSet, func() { v1alpha1.SetObjectDefaults_NamespacedSidecarSet(wire) })
		},
		func(r *apps.SidecarSetRevision, c randfill.Continue) {
			c.FillNoCustom(r)
			wire := &v1alpha1.SidecarSetRevision{}
			normalize(r, wire, v1alpha1.Convert_apps_SidecarSetRevision_To_v1alpha1_SidecarSetRevision,
				v1alpha1.Convert_v1alpha1_SidecarSetRevision_To_apps_SidecarSetRevision, func() { v1alpha1.SetObjectDefaults_SidecarSetRevision(wire) })
		},
		func(r *apps.SidecarSetRollout, c randfill.Continue) {
			c.FillNoCustom(r)
			if r.Spec.Proposed != nil {
				// v1beta1 scopes a SidecarSet to namespaces with namespaceSelector only; a SidecarSet
				// keeps spec.namespace across versions in an annotation, a proposed spec has none.
				r.Spec.Proposed.Namespace = ""
			}
			wire := &v1alpha1.SidecarSetRollout{}
			normalize(r, wire, v1alpha1.Convert_apps_SidecarSetRollout_To_v1alpha1_SidecarSetRollout,
				v1alpha1.Convert_v1alpha1_SidecarSetRollout_To_apps_SidecarSetRollout, func() { v1alpha1.SetObjectDefaults_SidecarSetRollout(wire) })
		},
	}
}

// normalize converts in to wire, defaults it, passes it through JSON and converts it back into in.
func normalize[I, W any](in *I, wire *W, out func(*I, *W, conversion.Scope) error, back func(*W, *I, conversion.Scope) error, defaults func()) {
	if err := out(in, wire, nil); err != nil {
		panic(err)
	}
	defaults()
	data, err := json.Marshal(wire)
	if err != nil {
		panic(err)
	}
	var fresh W
	if err := json.Unmarshal(data, &fresh); err != nil {
		panic(err)
	}
	var reset I
	*in = reset
	if err := back(&fresh, in, nil); err != nil {
		panic(err)
	}
}
