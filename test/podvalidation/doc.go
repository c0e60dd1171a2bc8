// Package podvalidation is a differential test of the SidecarSet validation of pod fields
// (package pkg/apis/apps/validation/podfields, as the SidecarSet validation calls it) against
// kube-apiserver's own pod validation (k8s.io/kubernetes/pkg/apis/core/validation), in a module
// of its own so that the server's module never depends on k8s.io/kubernetes. It requires
// k8s.io/kubernetes at the version hack/tools builds kube-apiserver from (with the same replace
// directives for the staging modules) and this repository through a replace of ../..
//
// Each case is the content of a SidecarSet (containers, init containers, volumes). The harness
// stores it as the server does (JSON, defaulting, this server's validation), injects it with the
// real injector (pkg/injection) into a pod that matches it, and validates the pod as
// kube-apiserver does on create (JSON, v1 defaulting, conversion, dropped disabled fields,
// ValidatePodCreate with the default 1.36 feature gates). kube-apiserver's errors on the
// injected containers and volumes are mapped back to the SidecarSet's field paths, and both sets
// of errors must be equal, as "path type" with subscripts below the container or volume left
// out (kube-apiserver reports some fields without their index or key, and a few under a wrong
// name, which the harness rewrites). A container that mounts every volume is added, since only
// mounted volumes are injected. Ignored, and counted: kube-apiserver's errors on the pod itself
// and those on sidecar fields that another pod would not have (a claim not in the pod's
// resourceClaims, a fileKeyRef volume the pod lacks, procMount Unmasked while the pod's hostUsers
// is true, an error repeated on a request the pod defaults copied from the limit).
//
// Cases: the examples and a table of valid and invalid containers and volumes
// (TestHandCases), the few things this server rejects on purpose (TestStricterThanKube), and
// generated ones: a valid baseline that sets most container fields and every volume kind, with
// one to three values replaced from pools of valid, borderline and invalid values
// (TestMutatedBaseline), and sparse randfill containers and volumes with pool-based values
// (TestRandomSidecars). PODVALIDATION_SEED and PODVALIDATION_CASES change the seed (1) and the
// number of generated cases per generator (3000).
package podvalidation
