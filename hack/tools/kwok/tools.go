//go:build tools

// Package tools pins kwok, which fakes nodes and kubelets for the local cluster:
// hack/install-tools.sh builds it from this module. It is a module of its own so that kwok's
// dependency versions never fight with hack/tools' k8s.io/kubernetes.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
