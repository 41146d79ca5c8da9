// Package execute runs the destructive steps of a plan against the
// cluster, each through the safety core's gate (safety.Gate) with facts
// read right before the step. It knows the cluster only through Cluster,
// which internal/kube implements and tests fake.
package execute
