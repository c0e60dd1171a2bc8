package manifest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/sidecarset/apiserver/pkg/apis/apps/install"
	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Decoder decodes the objects of the SidecarSet API read from files, whatever their served
// version (v1alpha1 or v1beta1), into v1alpha1: through the API's own scheme (package install),
// its defaulting and its conversions, strictly (an unknown or duplicate field is an error), as the
// server decodes a request.
type Decoder struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
}

// NewDecoder returns a decoder of the API's served versions.
func NewDecoder() *Decoder {
	s := runtime.NewScheme()
	install.Install(s)
	return &Decoder{scheme: s, codecs: serializer.NewCodecFactory(s, serializer.EnableStrict)}
}

// Decode decodes obj into into, a v1alpha1 object of obj's kind; a document without apiVersion
// is taken as v1alpha1.
func (d *Decoder) Decode(obj *unstructured.Unstructured, into runtime.Object) error {
	if obj.GetAPIVersion() == "" {
		obj = obj.DeepCopy()
		obj.SetAPIVersion(v1alpha1.SchemeGroupVersion.String())
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	internal, _, err := d.codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	if err := d.scheme.Convert(internal, into, nil); err != nil {
		return fmt.Errorf("%s %q: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}
