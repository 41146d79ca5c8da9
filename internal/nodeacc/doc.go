// Package nodeacc holds acceptance tests that need pods to run: through
// OpenTofu against a test cluster with a node (testcluster.Options.Node),
// where the provider's Jobs run for real, homes on the node's CSI driver are
// rebound, files written into homes are read back, and the hub's own pods
// (KubeSpawner's manifests) run before and after homes move. Its own
// package, so that its cluster starts and its tests run beside
// internal/provider's. Its tests run in parallel (each in its own namespace,
// with its own users).
package nodeacc
