package apiserver

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"

	"github.com/sidecarset/apiserver/pkg/apis/apps"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// TestLeadingKind: the storage codec's kind reader answers as encoding/json does, on what the
// server stores and on what it does not write (other key orders, nested kinds, escapes, keys in
// another case, duplicates after both were read, malformed JSON).
func TestLeadingKind(t *testing.T) {
	stored := encodeStored(t)
	for _, tc := range []struct {
		name string
		data string
	}{
		{"stored SidecarSet", string(stored)},
		{"apiVersion first", `{"apiVersion":"apps.kruise.io/v1alpha1","kind":"SidecarSet"}`},
		{"after other keys", `{"metadata":{"name":"a","ownerReferences":[{"kind":"Pod","apiVersion":"v1"}]},"spec":{"x":[1,2.5e3,true,null,"}\"]"]},"kind":"SidecarSet","apiVersion":"apps.kruise.io/v1alpha1"}`},
		{"only kind", `{"kind":"SidecarSet","spec":{}}`},
		{"neither", `{"spec":{}}`},
		{"empty", `{}`},
		{"spaces", " {\n \"kind\" : \"SidecarSet\" ,\t\"apiVersion\": \"apps.kruise.io/v1alpha1\" }"},
		{"escaped kind", `{"kind":"Sidecar\u0053et","apiVersion":"apps.kruise.io/v1alpha1"}`},
		{"escaped key", `{"ki\u006ed":"SidecarSet","apiVersion":"apps.kruise.io/v1alpha1"}`},
		{"key in another case", `{"Kind":"SidecarSet","apiVersion":"apps.kruise.io/v1alpha1"}`},
		{"kind not a string", `{"kind":3,"apiVersion":"apps.kruise.io/v1alpha1"}`},
		{"malformed", `{"kind":"SidecarSet",`},
		{"not an object", `["kind","SidecarSet"]`},
		{"bad group version", `{"kind":"SidecarSet","apiVersion":"a/b/c"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := json.DefaultMetaFactory.Interpret([]byte(tc.data))
			got, err := leadingKind{}.Interpret([]byte(tc.data))
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("error %v, encoding/json's %v", err, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Interpret (-encoding/json +leadingKind):\n%s", diff)
			}
		})
	}
}

// TestStorageCodecRoundTrip: what the storage codec writes it reads back whole, at the internal
// version.
func TestStorageCodecRoundTrip(t *testing.T) {
	data := encodeStored(t)
	obj, gvk, err := storageCodec().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gvk.Kind != "SidecarSet" || gvk.GroupVersion() != v1alpha1.SchemeGroupVersion {
		t.Errorf("decoded as %v", gvk)
	}
	ss, ok := obj.(*apps.SidecarSet)
	if !ok {
		t.Fatalf("decoded a %T, want the internal SidecarSet", obj)
	}
	if ss.Name != "log" || len(ss.Spec.Containers) != 1 || ss.Spec.Containers[0].Image != "busybox:1.36" {
		t.Errorf("decoded %+v", ss)
	}
}

func storedSidecarSet() *apps.SidecarSet {
	ss := &apps.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "log", Labels: map[string]string{"kind": "x"}}}
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ss.Spec.Containers = []apps.SidecarContainer{{Container: corev1.Container{Name: "log", Image: "busybox:1.36"}}}
	return ss
}

// encodeStored returns a SidecarSet as the storage codec writes it.
func encodeStored(t testing.TB) []byte {
	var b bytes.Buffer
	if err := storageCodec().Encode(storedSidecarSet(), &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// BenchmarkInterpret reads the kind of a stored SidecarSet with encoding/json and with leadingKind.
func BenchmarkInterpret(b *testing.B) {
	data := encodeStored(b)
	for _, tc := range []struct {
		name string
		meta json.MetaFactory
	}{{"encoding-json", json.DefaultMetaFactory}, {"leading", leadingKind{}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				if _, err := tc.meta.Interpret(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
