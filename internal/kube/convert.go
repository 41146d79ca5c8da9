package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// Metadata keys KubeSpawner sets on the claims it creates.
const (
	usernameKey   = "hub.jupyter.org/username"
	servernameKey = "hub.jupyter.org/servername"
)

// ClaimFromPVC converts a live claim to the provider's view of it.
func ClaimFromPVC(p *corev1.PersistentVolumeClaim) claims.Claim {
	c := claims.Claim{
		Name:          p.Name,
		Namespace:     p.Namespace,
		UID:           string(p.UID),
		UsernameLabel: p.Labels[usernameKey],
		Servername:    p.Annotations[servernameKey],
		Phase:         string(p.Status.Phase),
		VolumeName:    p.Spec.VolumeName,
		Labels:        p.Labels,
		Annotations:   p.Annotations,
		Deleting:      p.DeletionTimestamp != nil,
	}
	c.Username = p.Annotations[usernameKey]
	if c.Username == "" {
		c.Username = c.UsernameLabel
	}
	for _, m := range p.Spec.AccessModes {
		c.AccessModes = append(c.AccessModes, string(m))
	}
	if p.Spec.StorageClassName != nil {
		c.StorageClass = *p.Spec.StorageClassName
	}
	if q, ok := p.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		c.Requested = q.String()
		c.RequestedBytes = q.Value()
	}
	if q, ok := p.Status.Capacity[corev1.ResourceStorage]; ok {
		c.Capacity = q.String()
	}
	return c
}
