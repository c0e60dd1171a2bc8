// Package neighbour is the pure core of who a policy-path SidecarSet meets in a pod: which stored
// SidecarSets may inject into the same pods as one (its neighbours), and where they meet its pods.
//
// Neighbours is a sound test: two SidecarSets it calls apart never select a common pod (it asks
// selectoroverlap, which never calls co-matching selectors disjoint). Index narrows the pairs worth
// testing by the label every pod of a SidecarSet carries, so that thousands of SidecarSets on
// their own values of one label are tested against the few on their values. ScopeOf splits a
// cluster SidecarSet's neighbours into those that meet it in every namespace and the
// NamespacedSidecarSets that meet it in theirs only, within a budget per namespace; a namespace
// beyond it is handed off to the webhook, so that a tenant never changes how a pod of another
// namespace is injected, nor the path of a cluster SidecarSet. The planner
// (pkg/admission/policy) classifies SidecarSets with these answers, and the CEL of a group
// policy (pkg/admission/policy/celpatch) places each member's sidecars among its neighbours'.
package neighbour
