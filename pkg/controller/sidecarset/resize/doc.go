// Package resize tells the rollout planner what it needs to resize sidecars in place (through
// the pod resize subresource) rather than wait for pods to be recreated: whether the cluster can,
// as discovery says (once, again after a failed discovery), and which revisions of a SidecarSet
// differ from its spec in images and resources only. The controller's rounds and every replica's
// rollout view share one Support, so that the view plans resizes as the rounds do.
package resize
