// Package webhookconfig is the pure core of what the injection webhooks select: the
// objectSelectors, namespaceSelectors and match conditions of the webhooks of the injection
// configuration, so that kube-apiserver calls the server only for the pods it has work for.
//
// Matches takes the webhook-path SidecarSets and the policy-path ones (with their compiled
// members) and returns one webhook per label key their selectors require, for each class of
// namespace, with a match condition only where the selector says more than the webhook needs,
// and one more webhook for the needs of NamespacedSidecarSets, restricted to their namespaces and
// fitted so that one namespace never sends another's pods to the server. A match may be true for
// more pods than the SidecarSets select, never for fewer. ExpandWebhooks turns the matches into
// the webhooks of the deployed configuration; the intake webhooks (IntakeWebhooks) send every pod
// while a SidecarSet write is under way. The planner (pkg/admission/policy) computes the matches
// of a plan; the sync controller (pkg/controller/injectionsync) writes the configuration, and the
// server's freshness barrier (pkg/apiserver) reads its intake webhooks.
package webhookconfig
