package sidecarset

// ReasonNamespaceHoldLapsed is the warning event of a SidecarSet one namespace's pods held every
// place of maxUnavailable for rollout.NamespaceHoldLapse while other namespaces' pods waited.
// How long a namespace has held is kept in the SidecarSet's status (status.namespaceHolds,
// rollout.NextHolds), so that a new leader goes on measuring where the last one was, and every
// replica's rollout view lets holds lapse as the leader's rounds do.
const ReasonNamespaceHoldLapsed = "NamespaceHoldLapsed"
