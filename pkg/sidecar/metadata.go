package sidecar

import (
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// PatchPodMetadata applies a SidecarSet's patchPodMetadata entries, in list order, to a pod's
// annotations and returns the resulting map and whether it differs from annotations. The input
// map is never modified: the result is a copy when anything changed, annotations itself otherwise.
//
// Policies (OpenKruise §1.6): Retain or empty sets a key only when the pod lacks it; Overwrite
// always sets it; MergePatchJson applies the value as an RFC 7386 JSON merge patch to a non-empty
// existing value (storing the value verbatim otherwise). A merge failure is an error naming the
// key. Unknown policies are ignored.
func PatchPodMetadata(annotations map[string]string, patches []v1alpha1.SidecarSetPatchPodMetadata) (map[string]string, bool, error) {
	if len(patches) == 0 {
		return annotations, false, nil
	}
	out := make(map[string]string, len(annotations)+len(patches))
	for k, v := range annotations {
		out[k] = v
	}
	for i := range patches {
		p := &patches[i]
		switch p.PatchPolicy {
		case v1alpha1.SidecarSetRetainPatchPolicy, "":
			for k, v := range p.Annotations {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
		case v1alpha1.SidecarSetOverwritePatchPolicy:
			for k, v := range p.Annotations {
				out[k] = v
			}
		case v1alpha1.SidecarSetMergePatchJsonPatchPolicy:
			for k, v := range p.Annotations {
				origin, ok := out[k]
				if !ok || origin == "" {
					out[k] = v
					continue
				}
				merged, err := mergePatch(origin, v)
				if err != nil {
					return annotations, false, fmt.Errorf("patchPodMetadata[%d]: annotation %q: %w", i, k, err)
				}
				out[k] = merged
			}
		}
	}
	if sameStringMap(annotations, out) {
		return annotations, false, nil
	}
	return out, true, nil
}

// mergePatch applies an RFC 7386 merge patch, recovering from any panic of the library on
// pathological input.
func mergePatch(doc, patch string) (result string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("json merge patch failed: %v", r)
		}
	}()
	out, err := jsonpatch.MergePatch([]byte(doc), []byte(patch))
	if err != nil {
		return "", err
	}
	return string(out), nil
}

func sameStringMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
