package apiserver

import "k8s.io/apimachinery/pkg/runtime"

// withoutProtobuf serves what its serializer serves except protobuf: this server's types have no
// protobuf encoding. Clients that offer protobuf first, with JSON as the fallback (the namespace
// controller's and the garbage collector's metadata clients, deleting a namespace's
// NamespacedSidecarSets), then get JSON instead of a 500 for a list that cannot be encoded.
type withoutProtobuf struct {
	runtime.NegotiatedSerializer
}

// SupportedMediaTypes returns the media types of the wrapped serializer but protobuf.
func (s withoutProtobuf) SupportedMediaTypes() []runtime.SerializerInfo {
	var out []runtime.SerializerInfo
	for _, info := range s.NegotiatedSerializer.SupportedMediaTypes() {
		if info.MediaType != runtime.ContentTypeProtobuf {
			out = append(out, info)
		}
	}
	return out
}
