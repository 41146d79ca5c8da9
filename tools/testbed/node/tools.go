//go:build tools

// Package node pins the Kubernetes node commands (kubelet) and the scheduler
// for the test bed, in their own module so that building them leaves the
// control plane's cache key alone.
package node

import (
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
