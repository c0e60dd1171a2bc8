// Package podfields validates the pod fields a SidecarSet carries, its containers, init
// containers and volumes, as kube-apiserver (1.36, default features) validates those fields in a
// pod (k8s.io/kubernetes/pkg/apis/core/validation), with the same error types and the
// SidecarSet's field paths, so that a SidecarSet cannot make every pod it is injected into
// invalid. It mirrors kube-apiserver's code rather than importing it: the server's module does
// not depend on k8s.io/kubernetes. Every function is pure.
//
// ValidateVolumes validates the volumes (DNS label names, unique, exactly one source, every
// source's fields, projected and downward API files, ephemeral claim templates) and returns the
// valid ones: a volume with an error cannot be mounted. ValidateContainers validates every
// corev1.Container field of the containers and init containers against those volumes: name (a
// DNS label, unique across both lists), image, pull and termination message policies, ports (and
// host ports bound once among the containers and within each init container), env (relaxed
// names, downward API, resource, ConfigMap, Secret and file sources), envFrom, volume mounts and
// devices (paths, sub-paths, propagation, recursive read-only), resources (names, quantities,
// hugepages, requests against limits, claims), resize policy, security context (users, groups,
// procMount, seccomp, AppArmor, Windows options, privilege escalation), probes and lifecycle
// hooks, restartPolicyRules. It returns the errors by container, so that the SidecarSet
// validation (package validation, the caller) reports its own rules for each container next to
// them.
//
// The rules that depend on the rest of the pod or on the cluster are left to kube-apiserver,
// since injection may make the pod valid: a claim in the pod's resourceClaims, a fileKeyRef
// volume of the pod, procMount Unmasked with the pod's hostUsers, a sleep within the pod's grace
// period, RestartContainer with the pod's restartPolicy, hostProcess with the pod's hostNetwork,
// the stop signal with the pod's os (and dropped while ContainerStopSignals is off), privileged
// containers with --allow-privileged, an ephemeral volume's claim name (<pod name>-<volume
// name>). The clusterTrustBundle and podCertificate projections are not checked (kube-apiserver
// 1.36 drops them while their features are off). One rule is OpenKruise's, stricter than
// kube-apiserver 1.35+: no restartPolicy (nor restartPolicyRules) on containers, only Always on
// init containers.
//
// test/podvalidation, a module of its own that requires k8s.io/kubernetes, is the differential
// test of this package: it validates generated SidecarSets with the SidecarSet validation, injects
// them into pods, validates the pods with kube-apiserver's own code and requires the same errors
// on the sidecar fields.
package podfields
