package sidecar

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

func TestPatchPodMetadata(t *testing.T) {
	type patch = v1alpha1.SidecarSetPatchPodMetadata
	tests := []struct {
		name        string
		annotations map[string]string
		patches     []patch
		want        map[string]string
		wantChanged bool
		wantErr     bool
	}{
		{
			name:        "retain adds missing keys and keeps existing ones",
			annotations: map[string]string{"k1": "old"},
			patches:     []patch{{PatchPolicy: v1alpha1.SidecarSetRetainPatchPolicy, Annotations: map[string]string{"k1": "new", "k2": "v2"}}},
			want:        map[string]string{"k1": "old", "k2": "v2"},
			wantChanged: true,
		},
		{
			name:        "empty policy is retain, nil annotations",
			patches:     []patch{{Annotations: map[string]string{"k": "v"}}},
			want:        map[string]string{"k": "v"},
			wantChanged: true,
		},
		{
			name:        "overwrite",
			annotations: map[string]string{"k1": "old"},
			patches:     []patch{{PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"k1": "new"}}},
			want:        map[string]string{"k1": "new"},
			wantChanged: true,
		},
		{
			name:        "merge patch json on existing value",
			annotations: map[string]string{"oom": `{"log-agent":1,"envoy":5}`},
			patches:     []patch{{PatchPolicy: v1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"oom": `{"log-agent":2,"envoy":null,"x":3}`}}},
			want:        map[string]string{"oom": `{"log-agent":2,"x":3}`},
			wantChanged: true,
		},
		{
			name:        "merge patch json on missing and empty values stores verbatim",
			annotations: map[string]string{"b": ""},
			patches:     []patch{{PatchPolicy: v1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"a": `{"x":1}`, "b": `{"y":2}`}}},
			want:        map[string]string{"a": `{"x":1}`, "b": `{"y":2}`},
			wantChanged: true,
		},
		{
			name:        "merge patch json error",
			annotations: map[string]string{"a": `not json`},
			patches:     []patch{{PatchPolicy: v1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"a": `{"x":1}`}}},
			want:        map[string]string{"a": `not json`},
			wantErr:     true,
		},
		{
			name:        "entries apply in order",
			annotations: map[string]string{},
			patches: []patch{
				{PatchPolicy: v1alpha1.SidecarSetRetainPatchPolicy, Annotations: map[string]string{"k": "first"}},
				{PatchPolicy: v1alpha1.SidecarSetRetainPatchPolicy, Annotations: map[string]string{"k": "second"}},
				{PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"o": "1"}},
				{PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"o": "2"}},
			},
			want:        map[string]string{"k": "first", "o": "2"},
			wantChanged: true,
		},
		{
			name:        "no change",
			annotations: map[string]string{"k": "v"},
			patches:     []patch{{PatchPolicy: v1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"k": "v"}}, {PatchPolicy: "Unknown", Annotations: map[string]string{"z": "z"}}},
			want:        map[string]string{"k": "v"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneMap(tc.annotations)
			got, changed, err := PatchPodMetadata(tc.annotations, tc.patches)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b map[string]string) bool { return sameStringMap(a, b) })); diff != "" {
					t.Errorf("annotations (-want +got):\n%s", diff)
				}
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(before, tc.annotations); diff != "" {
				t.Errorf("input modified (-before +after):\n%s", diff)
			}
		})
	}
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
