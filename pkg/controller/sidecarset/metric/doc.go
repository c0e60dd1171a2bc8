// Package metric publishes the SidecarSet controller's metrics on the server's /metrics: pods
// upgraded and how long they took to be ready on the new spec, pods waiting and why, in-place
// resizes outstanding, pods not injected, stalled rollouts, and pod writes that failed. Progress
// turns each round's plan into them; a replica whose term as leader ends drops its gauges, so that
// sums over the replicas stay true.
package metric
