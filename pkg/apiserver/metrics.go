package apiserver

// The client-go metrics the server serves on /metrics beside its own (sidecarset_*, registered by
// the controllers) and the generic server's (apiserver_*, etcd_*). Importing k8s.io/component-base's
// providers registers them with legacyregistry, the registry /metrics serves, and installs them in
// client-go before the server creates any queue or leader elector (client-go takes its metrics
// provider when a queue or elector is created):
//
//   - workqueue_depth, workqueue_adds_total, workqueue_retries_total,
//     workqueue_queue_duration_seconds, workqueue_work_duration_seconds,
//     workqueue_unfinished_work_seconds and workqueue_longest_running_processor_seconds, labelled
//     with the queue's name: "sidecarset" (the SidecarSet controller) and "sidecarset-policies"
//     (the injection objects' controller), both on the replica that holds the controller Lease.
//   - leader_election_master_status (1 on the replica that holds the Lease, 0 on the others) and
//     leader_election_slowpath_total, labelled with the Lease's name, sidecarset-controller.
import (
	_ "k8s.io/component-base/metrics/prometheus/clientgo/leaderelection" // leader_election_* metrics
	_ "k8s.io/component-base/metrics/prometheus/workqueue"               // workqueue_* metrics
)
