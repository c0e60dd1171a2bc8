// Package sidecar is the pure rendering and bookkeeping shared by pod injection and by the in-place
// upgrade controller, so that the two cannot drift apart.
//
// It holds:
//   - the well-known pod annotation, env and condition keys of OpenKruise's SidecarSet;
//   - the pod annotation formats (kruise.io/sidecarset-hash and -hash-without-image, the injected
//     list, the working hot-upgrade container map, the in-place update state): parse, accepting
//     OpenKruise's legacy flat hash form, and render, byte-compatible with OpenKruise (encoding/json
//     with sorted map keys, RFC 3339 timestamps at second precision, controllerRevision omitted
//     when empty, sidecarList always present);
//   - patchPodMetadata (Retain, Overwrite, MergePatchJson);
//   - Render, which turns one SidecarContainer into the pod container(s) it becomes in a given pod:
//     shared volume mounts and the env their subPathExpr references, transferred env, IS_INJECTED,
//     shared volume devices, and for a hot-upgrade sidecar X the twins X-1 (working) and X-2
//     (idle, hotUpgradeEmptyImage) with SIDECARSET_VERSION(_ALT) env and version annotations;
//   - the hot-upgrade state machine helpers (which pod containers serve a SidecarSet container,
//     which twin is working, which twin to upgrade, the version annotations of an upgrade and of
//     a reset) and UpgradeContainer, the image-only in-place change.
//
// Invariants: every function is deterministic, performs no I/O, reads no clock (callers pass
// times) and never mutates its inputs unless its documentation says it works in place on a
// pod the caller owns. Functions that parse annotations written by others never panic on
// malformed values: strict parsers return an error, lenient readers treat them as absent.
package sidecar
