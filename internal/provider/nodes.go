package provider

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
)

// nodeOf converts a live Node (kube.Client.ListNodes) to what the profile checks read:
// labels, taints, cordon and allocatable CPU, memory and extended resources.
func nodeOf(n *corev1.Node) hubconfig.Node {
	out := hubconfig.Node{Name: n.Name, Labels: n.Labels, Unschedulable: n.Spec.Unschedulable, Extended: map[string]int64{}}
	for _, t := range n.Spec.Taints {
		out.Taints = append(out.Taints, hubconfig.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	for name, q := range n.Status.Allocatable {
		switch name {
		case corev1.ResourceCPU:
			out.CPUMillis = q.MilliValue()
		case corev1.ResourceMemory:
			out.MemBytes = q.Value()
		case corev1.ResourcePods, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		default:
			out.Extended[string(name)] = q.Value()
		}
	}
	return out
}
