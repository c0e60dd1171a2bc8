// Package policy is the pure core of policy injection: it compiles SidecarSets into
// MutatingAdmissionPolicies that kube-apiserver runs itself, and decides which path serves each
// SidecarSet.
//
// PlanPolicies takes the stored SidecarSets and the policies already in the cluster and returns,
// with no I/O, a Plan: the path of every SidecarSet (Policy, Webhook or None, with the reason),
// the group policies and their bindings (SidecarSets grouped by the label key and values they
// select, within CEL's and etcd's limits), and what the injection webhooks must select (label
// selectors per key, match conditions only where needed, the SidecarSets still within a policy's
// grace period, and the SidecarSets that leave them without a label selector). The controller in
// pkg/controller/injectionsync gathers its inputs and applies the plan; the webhook path injects with
// pkg/injection, the one renderer both paths share.
package policy
