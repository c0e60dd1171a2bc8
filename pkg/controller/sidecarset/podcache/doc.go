// Package podcache is the SidecarSet controller's view of the main cluster's pods: the pod
// informer keeps of each pod only what planning reads (rollout.Pod, through Transform), and
// Source lists the pods a SidecarSet selects, by its selector and the namespaces it allows, and
// tells the namespaces excluded from injection. The controller's rounds and every replica's
// rollout view read the same Source.
package podcache
