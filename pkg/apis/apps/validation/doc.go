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
//     initContainers is validated as kube-apiserver (1.36, default features) validates it in a
//     pod, with the same error types and the SidecarSet's field paths: name (a DNS label, unique
//     across both lists), image, pull and termination message policies, ports (and host ports
//     used once among the containers and within each init container), env (relaxed names,
//     downward API, resource, ConfigMap, Secret and file sources), envFrom, volume mounts and
//     devices of valid spec.volumes (paths, sub-paths, propagation, recursive read-only),
//     resources (names, quantities, hugepages, requests against limits, claims), resize policy,
//     security context (users, groups, procMount, seccomp, AppArmor, Windows options, privilege
//     escalation), probes and lifecycle hooks, restartPolicyRules. The rules that depend on the
//     rest of the pod or on the cluster are left to kube-apiserver, since injection may make the
//     pod valid: a claim in the pod's resourceClaims, a fileKeyRef volume of the pod, procMount
//     Unmasked with the pod's hostUsers, a sleep within the pod's grace period, RestartContainer
//     with the pod's restartPolicy, hostProcess with the pod's hostNetwork, the stop signal with
//     the pod's os (and dropped while ContainerStopSignals is off), privileged containers with
//     --allow-privileged. OpenKruise's restartPolicy rule stays, stricter than kube-apiserver
//     1.35+: no restartPolicy (nor restartPolicyRules) on containers, only Always on init
//     containers. test/podvalidation checks all of this against kube-apiserver's own code;
//   - containers: podInjectPolicy BeforeAppContainer or AfterAppContainer, shareVolumePolicy
//     enabled or disabled, upgradeType ColdUpgrade or HotUpgrade (HotUpgrade needs
//     hotUpgradeEmptyImage), transferEnv fieldRefs of apiVersion v1 selecting
//     metadata.labels['<key>'] or metadata.annotations['<key>'];
//   - resourcesPolicy (containers and native sidecar init containers only): not with resources,
//     mode sum or max, a non-empty RE2 name regex, limits or requests, expressions valid for the
//     package resourceexpr with variable cpu or memory;
//   - volumes: validated as kube-apiserver validates a pod's volumes (DNS label names, unique,
//     exactly one source, every source's fields, projected and downward API files, ephemeral
//     claim templates); a volume with an error cannot be mounted. The ephemeral claim name
//     (<pod name>-<volume name>) depends on the pod. The clusterTrustBundle and podCertificate
//     projections are not checked (kube-apiserver 1.36 drops them while their features are off);
//   - patchPodMetadata: annotations not empty and valid, policy Retain, Overwrite or
//     MergePatchJson, a key in at most one entry;
//   - on update: containers are never added or renamed, a container's upgradeType never changes,
//     and a canary's base annotation never changes.
//
// Cross-object (called by the admission plugin with the objects it read): ValidateCanary,
// ValidatePatchPodMetadataWhitelist and, when everything else passed, ValidateConflicts.
package validation
