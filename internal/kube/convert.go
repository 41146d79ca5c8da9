package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// ClaimFromPVC converts a live claim to the provider's view of it.
func ClaimFromPVC(p *corev1.PersistentVolumeClaim) claims.Claim { return convertClaim(p, nil) }

// convertClaim is ClaimFromPVC; with an interner (the claims of one List)
// the strings that claims share, the keys of their labels and annotations
// above all, are kept once instead of once per claim.
func convertClaim(p *corev1.PersistentVolumeClaim, in interner) claims.Claim {
	c := claims.Claim{
		Name:          p.Name,
		Namespace:     in.str(p.Namespace),
		UID:           string(p.UID),
		UsernameLabel: p.Labels[kubespawner.LabelUsername],
		Servername:    p.Annotations[kubespawner.AnnotationServername],
		Phase:         in.str(string(p.Status.Phase)),
		VolumeName:    p.Spec.VolumeName,
		Labels:        in.strs(p.Labels),
		Annotations:   in.strs(p.Annotations),
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
		c.StorageClass, c.ClassNamed = in.str(*p.Spec.StorageClassName), true
	}
	if p.Spec.VolumeMode != nil {
		c.VolumeMode = in.str(string(*p.Spec.VolumeMode))
	}
	if q, ok := p.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		c.Requested = in.str(q.String())
		c.RequestedBytes = q.Value()
	}
	if q, ok := p.Status.Capacity[corev1.ResourceStorage]; ok {
		c.Capacity = in.str(q.String())
		if r, ok := p.Spec.Resources.Requests[corev1.ResourceStorage]; ok && p.Status.Phase == corev1.ClaimBound && r.Cmp(q) > 0 {
			c.Resizing = true
		}
	}
	for _, cond := range p.Status.Conditions {
		if (cond.Type == corev1.PersistentVolumeClaimResizing || cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending) && cond.Status == corev1.ConditionTrue {
			c.Resizing = true
		}
	}
	return c
}

// interner keeps one copy of each string it has seen, up to maxInterned
// strings: the first claims of a List bring the strings all claims share
// (label and annotation keys, common values), and a List of many users
// does not fill it with their names. A nil interner keeps every string as
// it is.
type interner map[string]string

const maxInterned = 512

func (in interner) str(s string) string {
	if in == nil {
		return s
	}
	if v, ok := in[s]; ok {
		return v
	}
	if len(in) < maxInterned {
		in[s] = s
	}
	return s
}

// strs is m with its keys and values interned: a map of its own, so the
// decoded one goes with its page.
func (in interner) strs(m map[string]string) map[string]string {
	if in == nil || m == nil {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[in.str(k)] = in.str(v)
	}
	return out
}
