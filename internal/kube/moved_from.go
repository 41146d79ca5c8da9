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

// RecordPlaces adds templates to the shared claim's lists of the places
// homes had under earlier settings: moved are renamed from at spawn
// (migration.MovedFromAnnotation), left were left by a keep
// (migration.LeftAtAnnotation). Only while the claim is the object uid the
// plan read and is not being deleted. Nothing is ever taken off a list;
// places another apply added meanwhile are kept (the patch carries the
// resourceVersion it was made from, and a conflict is read and merged
// again).
func (c *Client) RecordPlaces(ctx context.Context, shared claims.Ref, uid string, moved, left []string) error {
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
		set := map[string]any{}
		for key, add := range map[string][]string{migration.MovedFromAnnotation: moved, migration.LeftAtAnnotation: left} {
			have, err := migration.DecodeMovedFrom(pvc.Annotations[key])
			if err != nil {
				return fmt.Errorf("claim %s: %w; nothing was changed", shared, err)
			}
			if want := migration.WithMovedFrom(have, add...); !slices.Equal(want, have) {
				set[key] = migration.EncodeMovedFrom(want)
			}
		}
		if len(set) == 0 {
			return nil
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pvc.ResourceVersion, "annotations": set}})
		if err != nil {
			return err
		}
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(shared.Namespace).Patch(ctx, shared.Name, types.MergePatchType, body, metav1.PatchOptions{})
		return err // a conflict is retried: read and merged again
	})
	return explainIf(err, "patch", "persistentvolumeclaims", shared.Namespace)
}
