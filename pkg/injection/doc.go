// Package injection is the pure core of SidecarSet pod injection: given a pod being created, its
// namespace, the candidate SidecarSets and a source of recorded revisions, Inject returns the
// injected pod, the RFC 6902 JSON patch that turns the submitted pod into it, and a record of
// every decision. It performs no I/O, reads no clock and draws no randomness of its own: the
// caller passes the time and the random source used by the Partial revision policy.
//
// # Algorithm (OpenKruise's pod webhook, §4 of the behaviour reference)
//
//  1. Candidates are processed in SidecarSet name order. A candidate is skipped when
//     injectionStrategy.paused, when its namespace restriction (v1alpha1 spec.namespace, which
//     wins over namespaceSelector, or namespaceSelector against the namespace labels) or its pod
//     selector (nil or empty never matches) does not match.
//  2. Each matching SidecarSet chooses the version to inject: the latest spec, or the revision
//     named by injectionStrategy.revision (revisionName or customVersion) according to
//     updateStrategy.paused and the Always/Partial policy.
//  3. A canary SidecarSet (apps.kruise.io/sidecarset-canary=true with apps.kruise.io/sidecarset-base)
//     removes its base from the pod's SidecarSets.
//  4. Every remaining SidecarSet applies its patchPodMetadata to the pod annotations.
//  5. Each SidecarSet renders its init containers (plus imagePullSecrets) and containers with
//     sidecar.Render (resourcesPolicy evaluated against the pod's own containers first), collects
//     the SidecarSet volumes they reference, and records its hash entries.
//  6. Merge: injected init containers are stably sorted by name; containers keep SidecarSet-name
//     then spec order (or are sorted by name with Options.SortSidecarContainersByName, OpenKruise's
//     EnableSortSidecarContainerByName gate). A pod container with a sidecar's name is replaced in
//     place; others go before or after the pod's own per podInjectPolicy. Pod volumes and pull
//     secrets win over the SidecarSets'. Annotations: hot-upgrade versions and working map, the two
//     hash maps and the injected list (only when something was injected).
//
// # Invariants
//
//   - The input pod and SidecarSets are never modified (they may be shared informer objects).
//   - Output depends only on the input: SidecarSet order, map order and the clock cannot change it.
//   - Idempotence: injecting into an already injected pod (a webhook reinvocation) yields no patch,
//     because sidecars are rendered from the SidecarSet, replaced in place, hash entries whose
//     content is unchanged keep their timestamp, and a Partial random choice sticks to the version
//     the pod already carries.
//   - Inject never panics on a decodable pod; failures are *Error values naming the SidecarSet and
//     the field (a resourcesPolicy without target container, a missing revision, a malformed pod
//     annotation, an invalid selector).
//   - The patch touches only what changed: /spec/initContainers, /spec/containers, /spec/volumes,
//     /spec/imagePullSecrets (add when the pod had none, else replace) and annotations (the whole
//     map added when the pod had none, else one op per changed key).
//
// # Users
//
// It is a domain package beside pkg/sidecar, as the rules of what goes into a pod are shared by
// every part that reasons about pods: the injection webhook (pkg/admission/webhook) runs it, the
// policy compiler (pkg/admission/policy) is tested against it, the rollout controller reads its
// collision rules and reasons to say why a pod was not injected, and kubectl sidecarset inject
// and explain run it offline. It imports nothing of pkg/admission, and neither do the controller
// nor the plugin (TestAdmissionImporters): only the server's wiring, the injection sync and tests
// import pkg/admission.
package injection
