//go:build tools

// Package tools pins helm, with which the chart charts/sidecarset-apiserver is linted and rendered:
// hack/install-helm.sh builds it from this module. It is a module of its own so that helm's
// dependency versions never fight with the main module's or hack/tools' k8s.io/kubernetes.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
