package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Merges (consolidation; migration.NextMerge decides their steps): the
// directory Job, the record on the user's claim, a Job copying the claim
// (mounted read-only) into the user's directory of the shared claim, and
// the claim's merged mark. Nothing here deletes anything but the
// provider's own Jobs, and nothing of a claim changes but its annotations.

// MergeJobComponent is the app.kubernetes.io/component of a merge's copy Job.
const MergeJobComponent = "home-merge"

// MergeClaimUIDAnnotation on a merge's copy Job is the UID of the claim it
// copies: a Job made for an earlier claim of that name is never taken for
// this claim's copy.
const MergeClaimUIDAnnotation = "jupyter-infra.github.io/merge-claim-uid"

// MergeClaim returns the user's claim as a merge sees it; nil when none
// (the executor's Merges).
func (c *Client) MergeClaim(ctx context.Context, namespace, name string) (*migration.MergeClaim, error) {
	pvc, err := c.GetClaim(ctx, namespace, name)
	if err != nil || pvc == nil {
		return nil, err
	}
	return mergeClaimOf(pvc), nil
}

func mergeClaimOf(pvc *corev1.PersistentVolumeClaim) *migration.MergeClaim {
	out := &migration.MergeClaim{UID: string(pvc.UID), Merged: pvc.Annotations[migration.MergedAnnotation], Deleting: pvc.DeletionTimestamp != nil}
	if v := pvc.Annotations[migration.MergeAnnotation]; v != "" {
		if rec, err := migration.DecodeMergeRecord(v); err != nil {
			out.Unreadable = true
		} else {
			out.Record = &rec
		}
	}
	return out
}

// MergeUsers lists the pods that use one of dirs of claim shared or mount
// claim (the executor's Merges), as DirectoryUsers, leaving out this merge's own
// directory and copy Jobs.
func (c *Client) MergeUsers(ctx context.Context, namespace, shared string, dirs []string, claim string) ([]string, error) {
	return c.directoryUsers(ctx, namespace, shared, dirs, claim, map[string]string{DirectoryJobName(claim): DirectoryJobComponent, migration.MergeJobName(claim): MergeJobComponent})
}

// PrepareMergeDirectory makes the merge's directory (the executor's Merges): the
// directory Job with kubespawner.MergeDirectoryCommand, which refuses a
// directory, or an earlier place of the home, that holds anything.
func (c *Client) PrepareMergeDirectory(ctx context.Context, job migration.Merge) error {
	j := MergeDirectoryJob(job, c.StepTimeout)
	return c.runDirectoryJob(ctx, j, job.Directory, job.Shared, fmt.Sprintf("nothing was recorded on claim %s/%s", job.Namespace, job.Claim))
}

// MergeDirectoryJob is the directory Job of a merge: DirectoryJob's, with
// the merge's command and environment.
func MergeDirectoryJob(job migration.Merge, timeout time.Duration) *batchv1.Job {
	j := DirectoryJob(migration.Split{User: job.User, Shared: job.Shared, Directory: job.Directory, Spec: claims.Spec{Namespace: job.Namespace, Name: job.Claim},
		UID: job.UID, GID: job.GID, Mode: job.Mode, Image: job.Image}, timeout)
	cmd, vars := kubespawner.MergeDirectoryCommand(kubespawner.Directory{Path: job.Directory, UID: job.UID, GID: job.GID, Mode: job.Mode}, job.Earlier)
	ctr := &j.Spec.Template.Spec.Containers[0]
	ctr.Command, ctr.Env = cmd, nil
	for _, v := range vars {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: v.Name, Value: v.Value})
	}
	return j
}

// RecordMerge writes rec on claim rec.Claim (the executor's Merges), over the
// claim as read (its resourceVersion), only while its UID is rec.ClaimUID,
// it carries no merge record or mark, and it is not being deleted;
// otherwise nothing is written (an error). The same record already there
// is not an error.
func (c *Client) RecordMerge(ctx context.Context, rec migration.MergeRecord) error {
	return c.patchMergeClaim(ctx, rec, "recorded", func(pvc *corev1.PersistentVolumeClaim, got *migration.MergeClaim) (map[string]any, error) {
		switch {
		case got.Record != nil && *got.Record == rec && got.Merged == "":
			return nil, nil
		case got.Record != nil || got.Unreadable || got.Merged != "":
			return nil, fmt.Errorf("claim %s/%s carries another merge's record or mark; not recorded", rec.Namespace, rec.Claim)
		}
		return map[string]any{migration.MergeAnnotation: rec.Encode()}, nil
	})
}

// MarkMerged sets migration.MergedAnnotation = rec.ClaimUID on claim
// rec.Claim (the executor's Merges), over the claim as read, only while its UID is
// rec.ClaimUID, its record is exactly rec, and it is not being deleted;
// otherwise nothing is written (an error).
func (c *Client) MarkMerged(ctx context.Context, rec migration.MergeRecord) error {
	return c.patchMergeClaim(ctx, rec, "marked merged", func(pvc *corev1.PersistentVolumeClaim, got *migration.MergeClaim) (map[string]any, error) {
		switch {
		case got.Record == nil || *got.Record != rec:
			return nil, fmt.Errorf("the record on claim %s/%s changed since the merge began; not marked merged", rec.Namespace, rec.Claim)
		case got.Merged == rec.ClaimUID:
			return nil, nil
		case got.Merged != "":
			return nil, fmt.Errorf("claim %s/%s carries another merged mark (%s); not marked merged", rec.Namespace, rec.Claim, got.Merged)
		}
		return map[string]any{migration.MergedAnnotation: rec.ClaimUID}, nil
	})
}

// patchMergeClaim merge-patches the annotations change returns onto claim
// rec.Claim over the version read, after checking it is rec's claim (its
// UID) and not being deleted; a nil change writes nothing. A conflict is
// retried: checked again.
func (c *Client) patchMergeClaim(ctx context.Context, rec migration.MergeRecord, what string,
	change func(*corev1.PersistentVolumeClaim, *migration.MergeClaim) (map[string]any, error)) error {
	err := c.Backoff.Retry(ctx, func() error {
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(rec.Namespace).Get(ctx, rec.Claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("claim %s/%s is gone; not %s", rec.Namespace, rec.Claim, what)
		}
		if err != nil {
			return err
		}
		switch {
		case rec.ClaimUID == "" || string(pvc.UID) != rec.ClaimUID:
			return fmt.Errorf("claim %s/%s was made again (UID %s, the merge is of %s); not %s", rec.Namespace, rec.Claim, pvc.UID, orNone(rec.ClaimUID), what)
		case pvc.DeletionTimestamp != nil:
			return fmt.Errorf("claim %s/%s is being deleted; not %s", rec.Namespace, rec.Claim, what)
		}
		ann, err := change(pvc, mergeClaimOf(pvc))
		if err != nil || ann == nil {
			return err
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pvc.ResourceVersion, "annotations": ann}})
		if err != nil {
			return err
		}
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(rec.Namespace).Patch(ctx, rec.Claim, types.MergePatchType, body, metav1.PatchOptions{})
		return err
	})
	return explainIf(err, "patch", "persistentvolumeclaims", rec.Namespace)
}

// MergeJob returns the copy Job of the merge of claim, with the UID of the
// claim it copies; nil when none, or when it is being deleted
// (the executor's Merges). A Job of that name that is not the provider's is an
// error: it is never deleted.
func (c *Client) MergeJob(ctx context.Context, namespace, claim string) (*migration.Job, error) {
	name := migration.MergeJobName(claim)
	j, err := c.getJob(ctx, namespace, name)
	switch {
	case err != nil || j == nil:
		return nil, err
	case j.Labels[kubespawner.LabelAppComponent] != MergeJobComponent || j.Labels[kubespawner.LabelAppManagedBy] != claims.ManagedBy:
		return nil, fmt.Errorf("Job %s/%s exists and is not the provider's merge Job of claim %s; it is never deleted. Find out what it is, delete it, and apply again", namespace, name, claim)
	case j.DeletionTimestamp != nil:
		return nil, nil
	}
	v := jobView(j)
	v.ClaimUID = j.Annotations[MergeClaimUIDAnnotation]
	return v, nil
}

// StartMergeJob creates the copy Job of job (the executor's Merges), after
// deleting any Job of its name and waiting until it and its pods are gone:
// no two copies ever write into the directory at once.
func (c *Client) StartMergeJob(ctx context.Context, job migration.Merge, claimUID string) error {
	j := MergeJobObject(job, claimUID)
	if _, err := c.MergeJob(ctx, j.Namespace, job.Claim); err != nil {
		return err // not the provider's
	}
	return c.startJobAlone(ctx, j)
}

// MergeJobObject is the copy Job of a merge: CopyJob's pod (its image
// job.CopyImage, migration.CopyScript as root with only JobCapabilities),
// with the user's claim mounted read-only at /src and the shared claim at
// /dst with subPath job.Directory; no service account token; the UID of
// the claim it copies.
func MergeJobObject(job migration.Merge, claimUID string) *batchv1.Job {
	j := CopyJob(migration.Copy{Namespace: job.Namespace, Source: job.Claim, Target: job.Shared, Image: job.CopyImage})
	j.Name = migration.MergeJobName(job.Claim)
	j.Labels[kubespawner.LabelAppComponent] = MergeJobComponent
	j.Spec.Template.Labels[kubespawner.LabelAppComponent] = MergeJobComponent
	j.Annotations = map[string]string{directoryCopyShared: job.Shared, directoryCopyDirectory: job.Directory, MergeClaimUIDAnnotation: claimUID}
	pod := &j.Spec.Template.Spec
	no := false
	pod.AutomountServiceAccountToken = &no
	pod.Containers[0].VolumeMounts[1].SubPath = job.Directory
	return j
}
