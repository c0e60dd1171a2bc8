// Package integration runs the server in process (test/integration/framework: the API server on
// an embedded etcd, no main cluster) and checks the API itself: storage, defaults, validation,
// versions, subresources and the manual's examples.
package integration
