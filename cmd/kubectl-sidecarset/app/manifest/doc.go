// Package manifest reads the manifests the commands take with -f: YAML or JSON documents (Lists
// opened), the pod a Pod or a workload's pod template stands for, and the objects of the
// SidecarSet API decoded from any served version as the server decodes them.
package manifest
