package apiserver

import (
	_ "k8s.io/apiserver/pkg/server"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/component-base/cli"
)
