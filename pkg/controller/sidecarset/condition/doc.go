// Package condition holds the conditions of a SidecarSet's status and how the controller decides
// them: Injected (which admission path injects new pods), WebhookReceivesEveryPod, PodsNotInjected,
// and the rollout conditions Ready, Progressing and Stalled that kubectl wait, kstatus and Argo CD
// read. It is a pure core: each function sets conditions in a status from what a round found, at
// the time it is given, keeping a condition's transition time while its status is unchanged.
// InjectionFrom reads the Injected condition back, for the rollout view of every replica.
package condition
