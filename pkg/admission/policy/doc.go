// Package policy is the pure core of policy injection: it plans which path serves each
// SidecarSet and compiles the policy-path ones into group MutatingAdmissionPolicies that
// kube-apiserver runs itself.
//
// PlanPolicies takes the stored SidecarSets and the policies already in the cluster and returns,
// with no I/O, a Plan: the path of every SidecarSet (Policy, Webhook or None, with the reason),
// the group policies and their bindings (SidecarSets grouped by the label key and values they
// select, within CEL's and etcd's limits), and what the injection webhooks must select (label
// selectors per key, match conditions only where needed, the SidecarSets still within a policy's
// grace period, and the SidecarSets that leave them without a label selector). This package
// classifies, groups and memoizes; its subpackages answer the rest: neighbour which SidecarSets
// may share a pod, celpatch what a group policy's CEL and JSONPatch look like, webhookconfig what
// the injection webhooks select. The controller in pkg/controller/injectionsync gathers its
// inputs and applies the plan; the webhook path injects with pkg/injection, the one renderer both
// paths share.
package policy
