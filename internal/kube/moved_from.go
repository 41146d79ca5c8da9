package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// RecordMovedFrom adds templates to the shared claim's list of the places
// homes had under earlier settings (migration.MovedFromAnnotation), only
// while the claim is the object uid the plan read and is not being
// deleted. Nothing is ever taken off the list; one another apply added
// meanwhile is kept (the patch carries the resourceVersion it was made
// from, and a conflict is read and merged again).
func (c *Client) RecordMovedFrom(ctx context.Context, shared claims.Ref, uid string, templates []string) error {
	err := c.Backoff.Retry(ctx, func() error {
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(shared.Namespace).Get(ctx, shared.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the shared claim %s is gone; nothing was changed", shared)
		}
		if err != nil {
			return err
		}
		switch {
		case string(pvc.UID) != uid:
			return fmt.Errorf("the shared claim %s was made again since the plan (UID %s, the plan read %s); nothing was changed. Plan again", shared, pvc.UID, uid)
		case pvc.DeletionTimestamp != nil:
			return fmt.Errorf("the shared claim %s is being deleted; nothing was changed", shared)
		}
		have, err := migration.DecodeMovedFrom(pvc.Annotations[migration.MovedFromAnnotation])
		if err != nil {
			return fmt.Errorf("claim %s: %w; nothing was changed", shared, err)
		}
		want := migration.WithMovedFrom(have, templates...)
		if slices.Equal(want, have) {
			return nil
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pvc.ResourceVersion,
			"annotations": map[string]any{migration.MovedFromAnnotation: migration.EncodeMovedFrom(want)}}})
		if err != nil {
			return err
		}
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(shared.Namespace).Patch(ctx, shared.Name, types.MergePatchType, body, metav1.PatchOptions{})
		return err // a conflict is retried: read and merged again
	})
	return explainIf(err, "patch", "persistentvolumeclaims", shared.Namespace)
}
