// Package backoff keeps, per SidecarSet, the pods whose last upgrade, resize or eviction
// kube-apiserver refused (a webhook, a policy, RBAC, a PodDisruptionBudget, the node or the
// namespace's quota), so that the controller leaves each alone for a delay that doubles with each
// refusal (rollout.NextBackoff) while the other pods go on. A new revision of the SidecarSet
// tries again at once. The SidecarSet's status records the backoffs (status.backoffs): a new
// leader takes them in (Sync) and waits as the last one would have.
package backoff
