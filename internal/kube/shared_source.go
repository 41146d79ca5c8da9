package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// PlannedSharedSource is what a plan needs to know of the shared claim's
// volume while homes move out of it: its source, whether or not a
// directory of it can be a volume of its own (an empty source when its
// kind is none the provider splits: the homes are copied). Nil, with no
// error, when the claim does not exist or is not bound (the plan says so).
func (c *Client) PlannedSharedSource(ctx context.Context, namespace, claim string) (*migration.VolumeSource, error) {
	pvc, err := c.GetClaim(ctx, namespace, claim)
	if err != nil || pvc == nil || pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return nil, err
	}
	pv, err := c.findVolume(ctx, pvc.Spec.VolumeName)
	if err != nil || pv == nil {
		return nil, err
	}
	if src, err := volumeSourceOf(pv); err == nil {
		return &src, nil
	}
	return &migration.VolumeSource{}, nil // a kind no move splits: the homes are copied
}
