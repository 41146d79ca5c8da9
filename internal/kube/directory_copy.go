package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// The move by copy of a home out of the shared layout
// (migration.NextDirectoryCopy decides its steps): the directory Job of
// the split, the user's claim of the configured class with the record, a
// Job copying the directory (mounted read-only) into it, and the claim's
// copied mark. Nothing here deletes anything but the provider's own Jobs.

// DirectoryCopyJobComponent is the app.kubernetes.io/component of the copy
// Job of a move by copy out of the shared layout.
const DirectoryCopyJobComponent = "home-directory-copy"

// Annotations on the copy Job of a move by copy.
const (
	// DirectoryCopyClaimUIDAnnotation is the UID of the claim the Job
	// copies into: a Job made for an earlier claim of that name is never
	// taken for this claim's copy.
	DirectoryCopyClaimUIDAnnotation = "jupyter-infra.github.io/directory-copy-claim-uid"
	directoryCopyShared             = "jupyter-infra.github.io/directory-of"
	directoryCopyDirectory          = "jupyter-infra.github.io/directory"
	directoryCopyTo                 = "jupyter-infra.github.io/copy-to"
)

// SharedClaimUID is the shared claim's UID; an error when it does not
// exist or is not bound (the executor's DirectoryCopies).
func (c *Client) SharedClaimUID(ctx context.Context, namespace, claim string) (string, error) {
	pvc, err := c.GetClaim(ctx, namespace, claim)
	switch {
	case err != nil:
		return "", err
	case pvc == nil:
		return "", fmt.Errorf("the shared claim %s/%s does not exist", namespace, claim)
	case pvc.Status.Phase != corev1.ClaimBound:
		return "", fmt.Errorf("the shared claim %s/%s is not bound to a volume (phase %s)", namespace, claim, orNone(string(pvc.Status.Phase)))
	}
	return string(pvc.UID), nil
}

// DirectoryUsers lists the unfinished pods in namespace that use one of
// dirs of claim shared (a home's directory and the places it had before a
// rename), or that mount claim (the executor's DirectoryCopies), from
// one List of the namespace's pods that are not Succeeded or Failed. A pod
// uses the directory when a container (init and ephemeral containers too)
// mounts the shared claim with a subPath equal to dir, above it or below
// it, with no subPath, or with a subPathExpr (not expanded here); a
// container running the shared layout's directory script (its init
// container, a move's directory Job) uses the directory in its
// environment. The pods of this move's own directory and copy Jobs are
// left out.
func (c *Client) DirectoryUsers(ctx context.Context, namespace, shared string, dirs []string, claim string) ([]string, error) {
	return c.directoryUsers(ctx, namespace, shared, dirs, claim, map[string]string{DirectoryJobName(claim): DirectoryJobComponent, migration.DirectoryCopyJobName(claim): DirectoryCopyJobComponent})
}

// directoryUsers is DirectoryUsers leaving out the pods of the Jobs own
// names (Job name → component).
func (c *Client) directoryUsers(ctx context.Context, namespace, shared string, dirs []string, claim string, own map[string]string) ([]string, error) {
	users := map[string]bool{}
	err := c.eachUnfinishedPod(ctx, namespace, func(p *corev1.Pod) {
		if comp, ok := own[p.Labels[JobNameLabel]]; ok && p.Labels[kubespawner.LabelAppComponent] == comp {
			return
		}
		if PodUsesDirectory(p, shared, dirs, claim) {
			users[p.Name] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(users)), nil
}

// PodUsesDirectory reports whether pod p mounts claim, or mounts one of
// dirs of claim shared, a directory above it or one below it, or all of it
// (DirectoryUsers): the rule a plan reads too (SharedSubPaths,
// migration.DirectoryUse).
func PodUsesDirectory(p *corev1.Pod, shared string, dirs []string, claim string) bool {
	for _, v := range p.Spec.Volumes {
		if pvc := v.PersistentVolumeClaim; pvc != nil && pvc.ClaimName == claim {
			return true
		}
	}
	use := migration.NewDirectoryUse(SharedSubPaths(p, shared))
	return slices.ContainsFunc(dirs, use.Uses)
}

// layoutCommand is the command of the shared layout's init container and
// of the directory Job (kubespawner.SharedDirectoryCommand), which mount
// the shared claim's root and touch only the directory in their
// environment.
// A merge's directory Job (kubespawner.MergeDirectoryCommand) too: it
// reads the earlier places in its environment, and changes none.
var layoutCommands = sync.OnceValue(func() [][]string {
	cmd, _ := kubespawner.SharedDirectoryCommand(kubespawner.Directory{})
	merge, _ := kubespawner.MergeDirectoryCommand(kubespawner.Directory{}, nil)
	return [][]string{cmd, merge}
})

func layoutScript(cmd []string) bool {
	return slices.ContainsFunc(layoutCommands(), func(c []string) bool { return slices.Equal(cmd, c) })
}

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name && e.ValueFrom == nil {
			return e.Value
		}
	}
	return ""
}

// CreateDirectoryCopyClaim creates the user's claim of a move by copy
// (the executor's DirectoryCopies): built as HomeClaim builds a home, so that
// KubeSpawner adopts it, of class spec.Class, with the record. A claim of
// that name that exists is claims.ErrExists.
func (c *Client) CreateDirectoryCopyClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	pvc, err := DirectoryCopyClaimObject(rec, spec)
	if err != nil {
		return err
	}
	return c.createRecordedClaim(ctx, pvc)
}

// DirectoryCopyClaimObject is the user's claim of the move by copy rec:
// HomeClaim's (class spec.Class, "" for the cluster's default), a file
// system volume, and the record.
func DirectoryCopyClaimObject(rec migration.SplitRecord, spec claims.Spec) (*corev1.PersistentVolumeClaim, error) {
	if rec.Method != migration.MethodDirectoryCopy || rec.Volume != "" || rec.Claim != spec.Name || rec.Namespace != spec.Namespace {
		return nil, fmt.Errorf("claim %s/%s: the record %+v is not a move by copy to it", spec.Namespace, spec.Name, rec)
	}
	pvc, err := HomeClaim(spec)
	if err != nil {
		return nil, err
	}
	fs := corev1.PersistentVolumeFilesystem
	pvc.Spec.VolumeMode = &fs
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[migration.SplitAnnotation] = rec.Encode()
	return pvc, nil
}

// DirectoryCopyJob returns the copy Job of the move to claim, with the UID
// of the claim it was made for; nil when none, or when it is being deleted
// (the executor's DirectoryCopies). A Job of that name that is not the
// provider's (its component label) is an error: it is never deleted.
func (c *Client) DirectoryCopyJob(ctx context.Context, namespace, claim string) (*migration.Job, error) {
	name := migration.DirectoryCopyJobName(claim)
	j, err := c.getJob(ctx, namespace, name)
	switch {
	case err != nil || j == nil:
		return nil, err
	case j.Labels[kubespawner.LabelAppComponent] != DirectoryCopyJobComponent || j.Labels[kubespawner.LabelAppManagedBy] != claims.ManagedBy:
		return nil, fmt.Errorf("Job %s/%s exists and is not the provider's copy Job of claim %s; it is never deleted. Find out what it is, delete it, and apply again", namespace, name, claim)
	case j.DeletionTimestamp != nil:
		return nil, nil // going: a new one is started once it is gone
	}
	v := jobView(j)
	v.ClaimUID = j.Annotations[DirectoryCopyClaimUIDAnnotation]
	return v, nil
}

// StartDirectoryCopyJob creates the copy Job of job for the claim of UID
// claimUID (the executor's DirectoryCopies), after deleting any Job of its name
// and waiting until it and its pods are gone: no two copies ever write
// into the claim at once.
func (c *Client) StartDirectoryCopyJob(ctx context.Context, job migration.DirectoryCopy, claimUID string) error {
	j := DirectoryCopyJobObject(job, claimUID)
	if _, err := c.DirectoryCopyJob(ctx, j.Namespace, job.Spec.Name); err != nil {
		return err // not the provider's
	}
	return c.startJobAlone(ctx, j)
}

// startJobAlone creates Job j after deleting any Job of its name (the
// caller checked it is the provider's) and waiting until it and its pods
// are gone.
func (c *Client) startJobAlone(ctx context.Context, j *batchv1.Job) error {
	if err := c.DeleteJob(ctx, j.Namespace, j.Name); err != nil {
		return err
	}
	if err := c.waitJobGone(ctx, j.Namespace, j.Name); err != nil {
		return err
	}
	if err := c.poll(ctx, func() (bool, error) {
		var pods *corev1.PodList
		err := c.Backoff.Retry(ctx, func() (err error) {
			pods, err = c.Kube.CoreV1().Pods(j.Namespace).List(ctx, metav1.ListOptions{LabelSelector: JobNameLabel + "=" + j.Name})
			return err
		})
		if err != nil {
			return false, Explain(err, "list", "pods", j.Namespace)
		}
		return len(pods.Items) == 0, nil
	}, fmt.Sprintf("the pods of an earlier copy Job %s/%s did not end", j.Namespace, j.Name)); err != nil {
		return err
	}
	return c.createJob(ctx, j)
}

// DirectoryCopyJobObject is the copy Job of a move by copy: CopyJob's pod
// (its image job.CopyImage, migration.CopyScript as root with only
// JobCapabilities), with the shared claim mounted read-only at /src with
// subPath job.Directory and the user's claim at /dst; no service account
// token; the UID of the claim it copies into.
func DirectoryCopyJobObject(job migration.DirectoryCopy, claimUID string) *batchv1.Job {
	j := CopyJob(migration.Copy{Namespace: job.Spec.Namespace, Source: job.Shared, Target: job.Spec.Name, Image: job.CopyImage})
	j.Name = migration.DirectoryCopyJobName(job.Spec.Name)
	j.Labels[kubespawner.LabelAppComponent] = DirectoryCopyJobComponent
	j.Spec.Template.Labels[kubespawner.LabelAppComponent] = DirectoryCopyJobComponent
	j.Annotations = map[string]string{directoryCopyShared: job.Shared, directoryCopyDirectory: job.Directory, directoryCopyTo: job.Spec.Name,
		DirectoryCopyClaimUIDAnnotation: claimUID}
	pod := &j.Spec.Template.Spec
	no := false
	pod.AutomountServiceAccountToken = &no
	pod.Containers[0].VolumeMounts[0].SubPath = job.Directory
	return j
}

// MarkSplitCopied sets migration.SplitCopiedAnnotation = uid on claim
// rec.Claim (the executor's DirectoryCopies), over the claim as read (its
// resourceVersion), only while its UID is uid, its record is exactly rec,
// and it is not being deleted; otherwise nothing is written (an error).
func (c *Client) MarkSplitCopied(ctx context.Context, rec migration.SplitRecord, uid string) error {
	err := c.Backoff.Retry(ctx, func() error {
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(rec.Namespace).Get(ctx, rec.Claim, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("claim %s/%s is gone; not marked copied. Apply again: the move starts again", rec.Namespace, rec.Claim)
		}
		if err != nil {
			return err
		}
		got := splitRecordOf(pvc.Annotations)
		switch {
		case string(pvc.UID) != uid:
			return fmt.Errorf("claim %s/%s was made again (UID %s, the copy went into %s); not marked copied. Apply again", rec.Namespace, rec.Claim, pvc.UID, uid)
		case got == nil || *got != rec:
			return fmt.Errorf("the record on claim %s/%s changed since the copy began; not marked copied", rec.Namespace, rec.Claim)
		case pvc.DeletionTimestamp != nil:
			return fmt.Errorf("claim %s/%s is being deleted; not marked copied", rec.Namespace, rec.Claim)
		case pvc.Annotations[migration.SplitCopiedAnnotation] == uid:
			return nil
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pvc.ResourceVersion,
			"annotations": map[string]any{migration.SplitCopiedAnnotation: uid}}})
		if err != nil {
			return err
		}
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(rec.Namespace).Patch(ctx, rec.Claim, types.MergePatchType, body, metav1.PatchOptions{})
		return err // a conflict (the claim changed in between) is retried: checked again
	})
	return explainIf(err, "patch", "persistentvolumeclaims", rec.Namespace)
}
