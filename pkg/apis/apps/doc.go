// +k8s:deepcopy-gen=package
// +groupName=apps.kruise.io

// Package apps holds the internal (hub) version of the apps.kruise.io API. Validation, registry
// strategies and printing work on these types; the wire versions convert to and from them.
package apps
