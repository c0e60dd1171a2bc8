// Package hash computes the SidecarSet spec hashes stamped in the kruise.io/sidecarset-hash and
// kruise.io/sidecarset-hash-without-image annotations.
//
// Algorithm (OpenKruise-compatible, byte for byte): marshal {"containers": spec.containers} with
// encoding/json, adding "initContainers": spec.initContainers (all of them) when at least one init
// container is a native sidecar (restartPolicy Always); SHA-256 the JSON, hex-encode it, and map each
// hex digit through apimachinery's safe-encode alphabet. The without-image variant blanks every
// image first. Volumes, selectors, strategies and plain init containers never change either hash.
package hash

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/sidecarset/apiserver/pkg/apis/apps/v1alpha1"
)

// Hashes is the pair of hashes of a SidecarSet spec.
type Hashes struct {
	// WithImage changes with any sidecar container field.
	WithImage string
	// WithoutImage changes with any sidecar container field but the image.
	WithoutImage string
}

// Stamp sets the hash annotations of a SidecarSet (internal or versioned) to h, as the server
// stores every SidecarSet: package stored (the registry strategy, migrate and the plugin's offline
// injection) and test fixtures stamp with it.
func (h Hashes) Stamp(ss metav1.Object) {
	a := ss.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.SidecarSetHashAnnotation] = h.WithImage
	a[v1alpha1.SidecarSetHashWithoutImageAnnotation] = h.WithoutImage
	ss.SetAnnotations(a)
}

// Of returns both hashes of spec.
func Of(spec *v1alpha1.SidecarSetSpec) (Hashes, error) {
	with, err := encode(spec.Containers, spec.InitContainers)
	if err != nil {
		return Hashes{}, err
	}
	without, err := encode(withoutImages(spec.Containers), withoutImages(spec.InitContainers))
	if err != nil {
		return Hashes{}, err
	}
	return Hashes{WithImage: with, WithoutImage: without}, nil
}

// WithoutImagesAndResources hashes sidecar containers as Of does, with every image, resources and
// resourcesPolicy blanked: two specs with the same value differ at most in what an in-place
// upgrade can apply to a running pod (images through the pod spec, resources through the pod
// resize subresource). It is this server's own: no annotation carries it.
func WithoutImagesAndResources(containers, initContainers []v1alpha1.SidecarContainer) (string, error) {
	return encode(withoutImagesAndResources(containers), withoutImagesAndResources(initContainers))
}

func encode(containers, initContainers []v1alpha1.SidecarContainer) (string, error) {
	doc := map[string]interface{}{"containers": containers}
	if hasNativeSidecar(initContainers) {
		doc["initContainers"] = initContainers
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return rand.SafeEncodeString(hex.EncodeToString(sum[:])), nil
}

func hasNativeSidecar(cs []v1alpha1.SidecarContainer) bool {
	for i := range cs {
		if p := cs[i].RestartPolicy; p != nil && *p == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}

func withoutImages(cs []v1alpha1.SidecarContainer) []v1alpha1.SidecarContainer {
	if cs == nil {
		return nil
	}
	out := make([]v1alpha1.SidecarContainer, len(cs))
	for i := range cs {
		cs[i].DeepCopyInto(&out[i])
		out[i].Image = ""
	}
	return out
}

func withoutImagesAndResources(cs []v1alpha1.SidecarContainer) []v1alpha1.SidecarContainer {
	out := withoutImages(cs)
	for i := range out {
		out[i].Resources, out[i].ResourcesPolicy = corev1.ResourceRequirements{}, nil
	}
	return out
}
