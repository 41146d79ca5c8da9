// Package tofurun runs the provider the way a user does: built into a local
// filesystem mirror, installed by `tofu init` or `terraform init`, driven by
// that CLI's commands. make demo, make bench and the tests that run the CLI
// themselves use it; CLI says which of the two the test bed runs.
package tofurun
