// Package validation validates SidecarSets in their internal, defaulted form. Every function is
// pure: checks that need other objects take them as arguments, and the caller (the registry
// strategy for a single object, the admission plugin for cross-object checks) does the reading.
// Errors carry the path of the offending field; messages keep OpenKruise's wording where clients
// may match on it.
//
// Single object (ValidateSidecarSet, ValidateSidecarSetUpdate):
//   - metadata: cluster-scoped; the name matches ^[a-zA-Z0-9\-]+$, is a DNS subdomain and has at
//     most 63 characters;
//   - selector: required, valid and not empty; namespaceSelector, if set, valid and not empty;
//     namespace, if set, a valid namespace name and not combined with namespaceSelector;
//   - injectionStrategy.revision: revisionName or customVersion set, policy Always or Partial
//     (whether the revision exists needs I/O and is the caller's check);
//   - updateStrategy: type RollingUpdate or NotUpdate; for RollingUpdate only: partition (other
//     than the default 0) and selector are exclusive, selector valid and not empty, partition and
//     maxUnavailable non-negative integers or integer percentages, priority weights 0-100 with
//     non-empty selectors or non-empty ordered keys but not both, scatter keys non-empty and
//     key/value pairs unique. A native sidecar init container (restartPolicy Always) is allowed
//     with RollingUpdate: unlike OpenKruise, this server upgrades native sidecars in place;
//   - at least one container or init container; every corev1.Container field of containers and
//     initContainers is validated by package podfields as kube-apiserver validates it in a pod,
//     against the valid spec.volumes, leaving to kube-apiserver the rules that depend on the rest
//     of the pod or on the cluster (see package podfields, whose differential test is
//     test/podvalidation). Package podfields keeps OpenKruise's restartPolicy rule, stricter than
//     kube-apiserver 1.35+: no restartPolicy (nor restartPolicyRules) on containers, only Always
//     on init containers;
//   - containers: podInjectPolicy BeforeAppContainer or AfterAppContainer, shareVolumePolicy
//     enabled or disabled, upgradeType ColdUpgrade or HotUpgrade (HotUpgrade needs
//     hotUpgradeEmptyImage and no host port: the container runs twice in the pod), transferEnv
//     fieldRefs of apiVersion v1 selecting metadata.labels['<key>'] or
//     metadata.annotations['<key>'];
//   - resourcesPolicy (containers and native sidecar init containers only): not with resources,
//     mode sum or max, a non-empty RE2 name regex, limits or requests, expressions valid for the
//     package resourceexpr with variable cpu or memory;
//   - volumes: validated by package podfields as kube-apiserver validates a pod's volumes; a
//     volume with an error cannot be mounted;
//   - patchPodMetadata: annotations not empty and valid, policy Retain, Overwrite or
//     MergePatchJson, a key in at most one entry;
//   - limits (limits.go), on what one object costs others: revisionHistoryLimit at most
//     MaxRevisionHistoryLimit (100), selector and namespaceSelector at most MaxSelectorValues (64)
//     label values each, containers and initContainers at most MaxContainers (16) each, the spec
//     at most MaxSpecBytes (128 KiB) as stored; an update is held to a limit only where it changes
//     that field (objects stored beyond a limit stay writable, they cannot grow). Both kinds share
//     them (a NamespacedSidecarSet's spec is validated as a SidecarSet's);
//   - on update: containers are never added or renamed, a container's upgradeType never changes,
//     and a canary's base annotation never changes.
//
// Cross-object (called by the admission plugin with the objects it read): ValidateCanary,
// ValidatePatchPodMetadataWhitelist and, when everything else passed, ValidateConflicts; the
// plugin also warns of (or refuses) PodSecurityViolations.
//
// Rollout subresource: ValidateRolloutAction validates a POSTed action.
package validation
