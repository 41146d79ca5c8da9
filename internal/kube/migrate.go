package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// MigratedAnnotation on a rebound claim says where it came from.
const MigratedAnnotation = "jupyter-infra.github.io/migrated"

// ListVolumes returns every PersistentVolume matching selector, in pages.
func (c *Client) ListVolumes(ctx context.Context, selector string) ([]corev1.PersistentVolume, error) {
	return listAll(ctx, c, "persistentvolumes", "", metav1.ListOptions{LabelSelector: selector},
		func(ctx context.Context, opts metav1.ListOptions) (page[corev1.PersistentVolume], error) {
			l, err := c.Kube.CoreV1().PersistentVolumes().List(ctx, opts)
			if err != nil {
				return page[corev1.PersistentVolume]{}, err
			}
			return page[corev1.PersistentVolume]{l.Items, l.ListMeta}, nil
		})
}

// MigrationsInProgress returns the volumes that carry a migration record
// for a claim in namespace ("": any namespace), by claim name.
func (c *Client) MigrationsInProgress(ctx context.Context, namespace string) (map[string]corev1.PersistentVolume, map[string]*migration.Record, error) {
	selector := migration.NamespaceLabel + "=" + namespace
	if namespace == "" {
		selector = migration.NamespaceLabel // every namespace
	}
	pvs, err := c.ListVolumes(ctx, selector)
	if err != nil {
		return nil, nil, err
	}
	vols, recs := map[string]corev1.PersistentVolume{}, map[string]*migration.Record{}
	for _, pv := range pvs {
		rec, err := migration.DecodeRecord(pv.Annotations[migration.RecordAnnotation])
		if err != nil {
			return nil, nil, fmt.Errorf("volume %s: %w", pv.Name, err)
		}
		if namespace != "" && rec.Namespace != namespace {
			continue
		}
		vols[rec.Claim], recs[rec.Claim] = pv, rec
	}
	return vols, recs, nil
}

// Rebind is one user's rebind job.
type Rebind struct {
	User      string
	Namespace string
	Claim     string
	Volume    string
	To        string // access mode
	UID       string // the claim the plan showed; "" when it showed none
}

// Rebind moves one claim to mode `to` on the same volume, step by step,
// deciding each step from what the cluster shows (migration.NextRebind), so
// that it resumes wherever an earlier run stopped. It returns the step
// reached. AfterStep, when set, is called after each operation; an error
// from it stops the rebind there (tests use it to stop an apply mid-way).
func (c *Client) Rebind(ctx context.Context, job Rebind) (migration.Step, error) {
	return c.runSteps(job.User, "rebind of "+job.Claim, migration.StepOf, migration.StepDone, func() (migration.Op, func() error, error) {
		claim, pvc, err := c.observeClaim(ctx, job)
		if err != nil {
			return "", nil, err
		}
		pv, err := c.getVolume(ctx, job.Volume)
		if err != nil {
			return "", nil, err
		}
		vol := volumeView(pv)
		op, err := migration.NextRebind(claim, &vol, job.To)
		return op, func() error { return c.rebindOp(ctx, job, op, pvc, pv) }, err
	})
}

// runSteps drives one migration, rebind or copy: next observes the cluster
// and returns the next operation and how to run it, until the operation is
// migration.OpDone. It returns the step reached (stepOf of the last
// operation decided; done when finished). AfterStep, when set, is called
// after each operation; an error from it stops the migration there.
func (c *Client) runSteps(user, what string, stepOf func(migration.Op) migration.Step, done migration.Step,
	next func() (migration.Op, func() error, error)) (migration.Step, error) {
	step := migration.StepPending
	for range 20 { // every path through the steps is shorter
		op, run, err := next()
		if err != nil {
			return step, err
		}
		if op == migration.OpDone {
			return done, nil
		}
		step = stepOf(op)
		if err := run(); err != nil {
			return step, fmt.Errorf("%s: %w", op, err)
		}
		if c.AfterStep != nil {
			if err := c.AfterStep(user, op); err != nil {
				return step, err
			}
		}
	}
	return step, fmt.Errorf("the %s did not converge", what)
}

func (c *Client) observeClaim(ctx context.Context, job Rebind) (*migration.Claim, *corev1.PersistentVolumeClaim, error) {
	var pvc *corev1.PersistentVolumeClaim
	err := c.Backoff.Retry(ctx, func() (err error) {
		pvc, err = c.Kube.CoreV1().PersistentVolumeClaims(job.Namespace).Get(ctx, job.Claim, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, Explain(err, "get", "persistentvolumeclaims", job.Namespace)
	}
	mc := &migration.Claim{UID: string(pvc.UID), Phase: string(pvc.Status.Phase), VolumeName: pvc.Spec.VolumeName,
		Deleting: pvc.DeletionTimestamp != nil, Annotations: pvc.Annotations}
	for _, m := range pvc.Spec.AccessModes {
		mc.Modes = append(mc.Modes, string(m))
	}
	return mc, pvc, nil
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
	v := migration.Volume{Name: pv.Name, Phase: string(pv.Status.Phase), ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy)}
	if ref := pv.Spec.ClaimRef; ref != nil {
		v.ClaimRefName, v.ClaimRefNS, v.ClaimRefUID = ref.Name, ref.Namespace, string(ref.UID)
	}
	for _, m := range pv.Spec.AccessModes {
		v.Modes = append(v.Modes, string(m))
	}
	if s, ok := pv.Annotations[migration.RecordAnnotation]; ok {
		if rec, err := migration.DecodeRecord(s); err == nil {
			v.Record = rec
		}
	}
	return v
}

// Metadata the PV binder and provisioners write on a claim; a recreated
// claim must not carry them over.
var binderAnnotations = []string{
	"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
	"volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}

func (c *Client) rebindOp(ctx context.Context, job Rebind, op migration.Op, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	switch op {
	case migration.OpRetain:
		rec := recordFor(job, pvc, pv)
		return c.patchVolume(ctx, pv.Name, map[string]any{
			"metadata": map[string]any{
				"labels":      map[string]any{migration.NamespaceLabel: job.Namespace},
				"annotations": map[string]any{migration.RecordAnnotation: rec.Encode()},
			},
			"spec": map[string]any{"persistentVolumeReclaimPolicy": "Retain"},
		})
	case migration.OpDeleteClaim:
		// The volume is retained; the claim goes only if it is the one the
		// plan showed and no pod mounts it now.
		return execute.Delete(ctx, c, safety.Step{Why: "rebind", User: job.User, Namespace: job.Namespace, Claim: job.Claim, UID: job.UID})
	case migration.OpWaitReleased:
		return c.waitVolume(ctx, pv.Name, func(v *corev1.PersistentVolume) bool { return v.Status.Phase == corev1.VolumeReleased })
	case migration.OpReserve:
		rec := *volumeView(pv).Record
		rec.Step = migration.StepReleased
		return c.patchVolume(ctx, pv.Name, map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{migration.RecordAnnotation: rec.Encode()}},
			"spec": map[string]any{
				// Reserved for the new claim: no other claim can take the volume.
				"claimRef": map[string]any{"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": job.Namespace, "name": job.Claim,
					"uid": nil, "resourceVersion": nil, "fieldPath": nil},
				"accessModes": []string{job.To},
			},
		})
	case migration.OpCreateClaim:
		rec := volumeView(pv).Record
		_, err := c.CreateClaim(ctx, reboundClaim(job, rec, pv))
		return err
	case migration.OpWaitBound:
		return c.waitClaimBound(ctx, job.Namespace, job.Claim)
	case migration.OpRestore:
		rec := volumeView(pv).Record
		return c.patchVolume(ctx, pv.Name, map[string]any{
			"metadata": map[string]any{
				"labels":      map[string]any{migration.NamespaceLabel: nil},
				"annotations": map[string]any{migration.RecordAnnotation: nil},
			},
			"spec": map[string]any{"persistentVolumeReclaimPolicy": rec.ReclaimPolicy},
		})
	}
	return fmt.Errorf("unknown step %q", op)
}

// recordFor is the record written when a rebind starts: the claim as it is
// (to recreate it) and the volume's reclaim policy (to restore it). A volume
// that already carries a record keeps its original policy.
func recordFor(job Rebind, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) migration.Record {
	if old := volumeView(pv).Record; old != nil {
		rec := *old
		rec.Step = migration.StepRetained
		return rec
	}
	rec := migration.Record{Step: migration.StepRetained, User: job.User, Claim: job.Claim, Namespace: job.Namespace, To: job.To,
		ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy), StorageClass: pvc.Spec.StorageClassName,
		Labels: pvc.Labels, Annotations: map[string]string{}}
	for _, m := range pvc.Spec.AccessModes {
		rec.From = append(rec.From, string(m))
	}
	if q, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
		rec.Requested = q.String()
	}
	if pvc.Spec.VolumeMode != nil {
		rec.VolumeMode = string(*pvc.Spec.VolumeMode)
	}
	for k, v := range pvc.Annotations {
		rec.Annotations[k] = v
	}
	for _, k := range binderAnnotations {
		delete(rec.Annotations, k)
	}
	return rec
}

// reboundClaim is the claim as it was, in the new mode, naming its volume.
func reboundClaim(job Rebind, rec *migration.Record, pv *corev1.PersistentVolume) *corev1.PersistentVolumeClaim {
	ann := map[string]string{}
	for k, v := range rec.Annotations {
		ann[k] = v
	}
	ann[MigratedAnnotation] = fmt.Sprintf("rebind from %s, volume %s", strings.Join(rec.From, ","), pv.Name)
	// The claim's own class; a claim that named none gets the volume's,
	// even "" (binding needs them to agree; the default class would not).
	class := pv.Spec.StorageClassName
	if rec.StorageClass != nil {
		class = *rec.StorageClass
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: job.Claim, Namespace: job.Namespace, Labels: rec.Labels, Annotations: ann},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(rec.To)},
			StorageClassName: &class,
			VolumeName:       pv.Name,
		},
	}
	// What the old claim requested, but never more than the volume holds:
	// while an expansion is pending the claim asked for more than its
	// volume, and a new claim asking for that would stay Pending. The
	// resize after the rebind asks for the rest again.
	size := pv.Spec.Capacity[corev1.ResourceStorage]
	if q, err := resource.ParseQuantity(rec.Requested); err == nil && (size.IsZero() || q.Cmp(size) <= 0) {
		size = q
	}
	pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: size}
	if rec.VolumeMode != "" {
		m := corev1.PersistentVolumeMode(rec.VolumeMode)
		pvc.Spec.VolumeMode = &m
	}
	return pvc
}

func (c *Client) patchVolume(ctx context.Context, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	err = c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	return explainIf(err, "patch", "persistentvolumes", "")
}

func (c *Client) waitVolume(ctx context.Context, name string, ok func(*corev1.PersistentVolume) bool) error {
	return c.poll(ctx, func() (bool, error) {
		pv, err := c.getVolume(ctx, name)
		if err != nil {
			return false, err
		}
		return ok(pv), nil
	}, fmt.Sprintf("volume %s was not released by the PV binder", name))
}

func (c *Client) waitClaimBound(ctx context.Context, namespace, name string) error {
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
