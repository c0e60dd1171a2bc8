// Package celpatch is the pure core of what a group MutatingAdmissionPolicy looks like: the CEL
// of its variables and match conditions and the JSONPatch expressions of its mutations, rendered
// from the SidecarSets it injects.
//
// NewMember renders one SidecarSet once, in Go, with the renderer the webhook injects with
// (pkg/sidecar), each injected object as a constant CEL literal, and places its sidecars among
// those of its neighbours (see pkg/admission/policy/neighbour). A Group holds members up to what
// kube-apiserver compiles quickly (CEL's expression size limit, the type checker's time in the
// square of an expression's comprehensions and literals), and Objects renders its policy and
// binding. The invariant: applied in any order, the policies of a pod's SidecarSets give the pod
// the webhook gives it, injecting in name order; a pod declaring a sidecar's name is left to the
// webhook. The planner (pkg/admission/policy) decides which SidecarSets a group holds; the
// webhook configuration (pkg/admission/policy/webhookconfig) reads the CEL helpers and each
// member's deferral names.
package celpatch
