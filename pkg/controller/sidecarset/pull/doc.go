// Package pull is the adapter of image pre-download (package predownload plans it, pure): it pulls
// the new sidecar images of the SidecarSets that ask for it (predownload.ParallelismAnnotation)
// onto the nodes of the pods their rollouts upgrade next, through short-lived pull pods in the
// server's namespace, and holds those pods' upgrades until the pulls end. It watches its pull pods
// and the nodes' image lists, queues a round of a SidecarSet when one of its pulls ends, and
// remembers, by SidecarSet, how pulls ended and which pods the controller's last round held,
// which the rollout view reads.
package pull
