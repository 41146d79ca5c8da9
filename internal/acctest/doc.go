// Package acctest runs acceptance tests against the local test cluster with
// a real OpenTofu or Terraform binary (TESTBED_CLI, see tofurun.Selected)
// and the real hashicorp/helm provider. A test package's TestMain calls Run;
// tests then call Cluster for the running control plane and Config for a
// configuration whose provider block points at it.
package acctest
