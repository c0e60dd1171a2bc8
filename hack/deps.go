//go:build tools

// Package hack pins build-time tools so their versions follow go.mod.
package hack

import (
	_ "k8s.io/code-generator"
	_ "k8s.io/kube-openapi/cmd/openapi-gen"
)
