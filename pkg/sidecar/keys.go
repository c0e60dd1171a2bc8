package sidecar

import corev1 "k8s.io/api/core/v1"

// Pod annotations written by injection and by the in-place upgrade controller. The keys and value
// formats are OpenKruise's, so pods injected by either system are understood by the other.
const (
	// HashAnnotation maps each injected SidecarSet name to a HashEntry carrying the SidecarSet's
	// kruise.io/sidecarset-hash the pod's sidecars were injected from or last upgraded to. The
	// SidecarSet object carries its own hash under the same key.
	HashAnnotation = "kruise.io/sidecarset-hash"
	// HashWithoutImageAnnotation has the shape of HashAnnotation, with the hash computed without
	// images and no controllerRevision; it is written at injection only.
	HashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// InjectedListAnnotation is the comma-joined, sorted list of the SidecarSets that matched the
	// pod at creation; the controller manages exactly the pods listed here.
	InjectedListAnnotation = "kruise.io/sidecarset-injected-list"
	// InPlaceUpdateStateAnnotation maps SidecarSet names to an InPlaceUpdateState; controller only.
	InPlaceUpdateStateAnnotation = "kruise.io/sidecarset-inplace-update-state"
	// WorkingHotUpgradeContainerAnnotation maps a hot-upgrade sidecar name X to the twin that
	// currently serves, for every hot-upgrade sidecar of every SidecarSet in the pod.
	WorkingHotUpgradeContainerAnnotation = "kruise.io/sidecarset-working-hotupgrade-container"
	// VersionAnnotationPrefix followed by a pod container name holds that hot-upgrade twin's
	// version: "1" at injection, "0" for the idle slot, else a SidecarSet resourceVersion.
	VersionAnnotationPrefix = "version.sidecarset.kruise.io/"
	// VersionAltAnnotationPrefix followed by a pod container name holds the version of the other
	// twin as seen by this one (OpenKruise's proposal spelled it version_alt; the code uses this).
	VersionAltAnnotationPrefix = "versionalt.sidecarset.kruise.io/"
)

// Environment variables set in injected containers.
const (
	// InjectedEnv set to "true" marks every injected container and init container as a sidecar.
	InjectedEnv = "IS_INJECTED"
	// VersionEnv is the downward-API env of a hot-upgrade twin reading its version annotation.
	VersionEnv = "SIDECARSET_VERSION"
	// VersionAltEnv is the downward-API env of a hot-upgrade twin reading its versionalt annotation.
	VersionAltEnv = "SIDECARSET_VERSION_ALT"
)

// The pod condition the controller maintains.
const (
	// UpgradableCondition is the pod condition type telling whether every SidecarSet of the pod can
	// upgrade it in place. Its message is a JSON object of SidecarSet name to bool.
	UpgradableCondition corev1.PodConditionType = "SidecarSetUpgradable"
	// UpgradableReason is the reason of UpgradableCondition when it is True.
	UpgradableReason = "AllSidecarsetUpgradable"
	// NotUpgradableReason is the reason of UpgradableCondition when it is False: a change other
	// than an image cannot be applied to the running pod.
	NotUpgradableReason = "UpdateImmutableField"
)

// Hot-upgrade twin name suffixes: X-1 is the twin working at injection, X-2 the idle one.
const (
	hotSuffix1 = "-1"
	hotSuffix2 = "-2"
)
