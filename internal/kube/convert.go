package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// ClaimFromPVC converts a live claim to the provider's view of it.
func ClaimFromPVC(p *corev1.PersistentVolumeClaim) claims.Claim {
	c := claims.Claim{
		Name:          p.Name,
		Namespace:     p.Namespace,
		UID:           string(p.UID),
		UsernameLabel: p.Labels[kubespawner.LabelUsername],
		Servername:    p.Annotations[kubespawner.AnnotationServername],
		Phase:         string(p.Status.Phase),
		VolumeName:    p.Spec.VolumeName,
		Labels:        p.Labels,
		Annotations:   p.Annotations,
		Deleting:      p.DeletionTimestamp != nil,
	}
	c.Username = p.Annotations[kubespawner.AnnotationUsername]
	if c.Username == "" {
		c.Username = c.UsernameLabel
	}
	for _, m := range p.Spec.AccessModes {
		c.AccessModes = append(c.AccessModes, string(m))
	}
	if p.Spec.StorageClassName != nil {
		c.StorageClass, c.ClassNamed = *p.Spec.StorageClassName, true
	}
	if p.Spec.VolumeMode != nil {
		c.VolumeMode = string(*p.Spec.VolumeMode)
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
