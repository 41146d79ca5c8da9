// Package testcluster starts a throwaway Kubernetes control plane — etcd,
// kube-apiserver and optionally kube-controller-manager, all real binaries
// built by tools/testbed — on loopback ports, for the acceptance tests and
// the demo.
//
// The API server serves TLS with a generated CA (clients verify it), uses
// RBAC, and knows three token identities: an admin (system:masters), a
// least-privilege identity that has no permissions until a test binds a Role
// to it, and the controller manager's own identity.
package testcluster
