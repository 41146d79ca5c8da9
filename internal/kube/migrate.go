package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// ListVolumes returns every PersistentVolume matching selector, in pages.
func (c *Client) ListVolumes(ctx context.Context, selector string) ([]corev1.PersistentVolume, error) {
	return listAll(ctx, c, "persistentvolumes", "", metav1.ListOptions{LabelSelector: selector},
		func(ctx context.Context, opts metav1.ListOptions) (page[corev1.PersistentVolume], error) {
			l, err := c.Kube.CoreV1().PersistentVolumes().List(ctx, opts)
			if err != nil {
				return page[corev1.PersistentVolume]{}, err
			}
			return page[corev1.PersistentVolume]{items: l.Items, meta: l.ListMeta}, nil
		})
}

// FormerVolumes names the volumes once bound to claim namespace/name (a
// claimRef with a UID: a claim of that name existed), each with its phase,
// for a plan that would create that claim (one paginated List). A volume
// made for a claim to come (a claimRef without a UID) is not one.
func (c *Client) FormerVolumes(ctx context.Context, namespace, name string) ([]string, error) {
	pvs, err := c.ListVolumes(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pv := range pvs {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == namespace && ref.Name == name && ref.UID != "" {
			out = append(out, fmt.Sprintf("%s (%s, claim UID %s)", pv.Name, pv.Status.Phase, ref.UID))
		}
	}
	return out, nil
}

// MigrationsInProgress returns the volumes that carry a migration record
// for a claim in namespace ("": any namespace), by the claim its record names.
func (c *Client) MigrationsInProgress(ctx context.Context, namespace string) (map[claims.Ref]corev1.PersistentVolume, map[claims.Ref]*migration.Record, error) {
	selector := migration.NamespaceLabel + "=" + namespace
	if namespace == "" {
		selector = migration.NamespaceLabel // every namespace
	}
	pvs, err := c.ListVolumes(ctx, selector)
	if err != nil {
		return nil, nil, err
	}
	vols, recs := map[claims.Ref]corev1.PersistentVolume{}, map[claims.Ref]*migration.Record{}
	for _, pv := range pvs {
		rec, err := migration.DecodeRecord(pv.Annotations[migration.RecordAnnotation])
		if err != nil {
			return nil, nil, fmt.Errorf("volume %s: %w", pv.Name, err)
		}
		if namespace != "" && rec.Namespace != namespace {
			continue
		}
		ref := claims.Ref{Namespace: rec.Namespace, Name: rec.Claim}
		vols[ref], recs[ref] = pv, rec
	}
	return vols, recs, nil
}

// Volume returns a volume as the rebind's steps see it (execute.Migrations).
func (c *Client) Volume(ctx context.Context, name string) (*migration.Volume, error) {
	pv, err := c.getVolume(ctx, name)
	if err != nil {
		return nil, err
	}
	v := volumeView(pv)
	return &v, nil
}

func (c *Client) getVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	var pv *corev1.PersistentVolume
	err := c.Backoff.Retry(ctx, func() (err error) {
		pv, err = c.Kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return nil, Explain(err, "get", "persistentvolumes", "")
	}
	return pv, nil
}

func volumeView(pv *corev1.PersistentVolume) migration.Volume {
	v := migration.Volume{Name: pv.Name, Phase: string(pv.Status.Phase), ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy),
		StorageClass: pv.Spec.StorageClassName, ResourceVersion: pv.ResourceVersion}
	if ref := pv.Spec.ClaimRef; ref != nil {
		v.ClaimRefName, v.ClaimRefNS, v.ClaimRefUID = ref.Name, ref.Namespace, string(ref.UID)
	}
	for _, m := range pv.Spec.AccessModes {
		v.Modes = append(v.Modes, string(m))
	}
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		v.Capacity = q.String()
	}
	if s, ok := pv.Annotations[migration.RecordAnnotation]; ok {
		if rec, err := migration.DecodeRecord(s); err == nil {
			v.Record = rec
		}
	}
	return v
}

// RetainVolume retains the volume and writes rec on it (execute.Migrations).
func (c *Client) RetainVolume(ctx context.Context, v migration.Volume, rec migration.Record) error {
	return c.patchVolume(ctx, v, map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{migration.NamespaceLabel: rec.Namespace},
			"annotations": map[string]any{migration.RecordAnnotation: rec.Encode()},
		},
		"spec": map[string]any{"persistentVolumeReclaimPolicy": "Retain"},
	})
}

// ReserveVolume gives the volume to the new claim (uid) rec names, in
// mode rec.To, and writes rec on it (execute.Migrations). The claim names
// the volume already, so the binder binds them; whether it had released
// the volume from the old claim yet does not matter.
func (c *Client) ReserveVolume(ctx context.Context, v migration.Volume, rec migration.Record, uid string) error {
	return c.patchVolume(ctx, v, map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{migration.RecordAnnotation: rec.Encode()}},
		"spec": map[string]any{
			// The new claim's only: no other claim can take the volume.
			"claimRef": map[string]any{"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": rec.Namespace, "name": rec.Claim,
				"uid": uid, "resourceVersion": nil, "fieldPath": nil},
			"accessModes": []string{rec.To},
		},
	})
}

// CreateReboundClaim creates the claim rec describes on volume v
// (execute.Migrations).
func (c *Client) CreateReboundClaim(ctx context.Context, rec migration.Record, v migration.Volume) error {
	pvc, err := reboundClaim(rec, v)
	if err != nil {
		return err
	}
	err = c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		// Ours only when an earlier attempt of this create made it (its answer
		// lost): the same volume and the same migration note. Any other claim
		// of that name is never taken over.
		got, gerr := c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
		switch {
		case gerr != nil:
			return gerr
		case got.Spec.VolumeName == pvc.Spec.VolumeName && got.Annotations[migration.MigratedAnnotation] == pvc.Annotations[migration.MigratedAnnotation]:
			return nil
		}
		return fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, claims.ErrExists)
	})
	if errors.Is(err, claims.ErrExists) {
		return err
	}
	return explainIf(err, "create", "persistentvolumeclaims", pvc.Namespace)
}

// RestoreVolume sets the reclaim policy back and removes the record and
// its label (execute.Migrations).
func (c *Client) RestoreVolume(ctx context.Context, v migration.Volume, policy string) error {
	return c.patchVolume(ctx, v, map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]any{migration.NamespaceLabel: nil},
			"annotations": map[string]any{migration.RecordAnnotation: nil},
		},
		"spec": map[string]any{"persistentVolumeReclaimPolicy": policy},
	})
}

// reboundClaim is the claim as it was, in the new mode, naming its volume.
func reboundClaim(rec migration.Record, v migration.Volume) (*corev1.PersistentVolumeClaim, error) {
	ann := map[string]string{}
	for k, val := range rec.Annotations {
		ann[k] = val
	}
	ann[migration.MigratedAnnotation] = fmt.Sprintf("rebind from %s, volume %s", strings.Join(rec.From, ","), v.Name)
	// The claim's own class; a claim that named none gets the volume's,
	// even "" (binding needs them to agree; the default class would not).
	class := v.StorageClass
	if rec.StorageClass != nil {
		class = *rec.StorageClass
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: rec.Claim, Namespace: rec.Namespace, Labels: rec.Labels, Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(rec.To)},
			StorageClassName: &class,
			VolumeName:       v.Name,
		},
	}
	// What the old claim requested, but never more than the volume holds:
	// while an expansion is pending the claim asked for more than its
	// volume, and a new claim asking for that would stay Pending. The
	// resize after the rebind asks for the rest again.
	var size resource.Quantity
	if v.Capacity != "" {
		q, err := resource.ParseQuantity(v.Capacity)
		if err != nil {
			return nil, fmt.Errorf("volume %s: capacity %q: %w", v.Name, v.Capacity, err)
		}
		size = q
	}
	if q, err := resource.ParseQuantity(rec.Requested); err == nil && (size.IsZero() || q.Cmp(size) <= 0) {
		size = q
	}
	pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: size}
	if rec.VolumeMode != "" {
		m := corev1.PersistentVolumeMode(rec.VolumeMode)
		pvc.Spec.VolumeMode = &m
	}
	return pvc, nil
}

// patchVolume patches the volume v shows, only over the version v shows:
// a volume that changed since (another apply, the PV binder) is not
// patched, and the answer is claims.ErrChanged.
func (c *Client) patchVolume(ctx context.Context, v migration.Volume, patch map[string]any) error {
	meta, _ := patch["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		patch["metadata"] = meta
	}
	meta["resourceVersion"] = v.ResourceVersion
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	err = c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.CoreV1().PersistentVolumes().Patch(ctx, v.Name, types.MergePatchType, body, metav1.PatchOptions{})
		if apierrors.IsConflict(err) {
			return fmt.Errorf("volume %s: %w", v.Name, claims.ErrChanged) // not retried: decided again
		}
		return err
	})
	if errors.Is(err, claims.ErrChanged) {
		return err
	}
	return explainIf(err, "patch", "persistentvolumes", "")
}

// WaitBound waits until the claim is Bound (execute.Migrations).
func (c *Client) WaitBound(ctx context.Context, namespace, name string) error {
	return c.poll(ctx, func() (bool, error) {
		var pvc *corev1.PersistentVolumeClaim
		err := c.Backoff.Retry(ctx, func() (err error) {
			pvc, err = c.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return false, Explain(err, "get", "persistentvolumeclaims", namespace)
		}
		return pvc.Status.Phase == corev1.ClaimBound, nil
	}, fmt.Sprintf("claim %s/%s was not bound", namespace, name))
}

func (c *Client) poll(ctx context.Context, done func() (bool, error), what string) error {
	deadline := time.Now().Add(c.StepTimeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s within %s; is kube-controller-manager running? Apply again to resume", what, c.StepTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
