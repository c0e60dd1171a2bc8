// Package e2e runs the project against real components: a local cluster from hack/local-up.sh
// (etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok built from the Go module
// proxy, this server registered through the aggregation layer, and with REAL_NODE=1 a kubelet with
// containerd). Set E2E=1 to run it (make e2e); E2E_KEEP=1 leaves the cluster running afterwards.
package e2e
