package apps

// The canary annotations: a SidecarSet annotated SidecarSetCanaryAnnotation "true" with a
// non-empty SidecarSetBaseAnnotation is a canary, which overrides the SidecarSet of that name (its
// base) for every pod both select.
const (
	SidecarSetCanaryAnnotation = "apps.kruise.io/sidecarset-canary"
	SidecarSetBaseAnnotation   = "apps.kruise.io/sidecarset-base"
)

// CanaryBase returns the base that a SidecarSet with these annotations overrides, and whether it
// is a canary. The injector, the policy compiler, explain and validation all read the canary
// relation with it.
func CanaryBase(annotations map[string]string) (base string, ok bool) {
	if annotations[SidecarSetCanaryAnnotation] != "true" {
		return "", false
	}
	base = annotations[SidecarSetBaseAnnotation]
	return base, base != ""
}
