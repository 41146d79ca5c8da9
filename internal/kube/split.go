package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// The zero-copy move of a home from a directory of the shared claim to a
// claim of its own (migration.NextSplit decides its steps): a Job makes
// the directory if it is missing, a volume on the directory, the user's
// claim naming it. Nothing here deletes or changes a file, a volume or a
// claim that exists.

// DirectoryJobComponent is the app.kubernetes.io/component of the Job that
// makes a user's missing directory on the shared claim.
const DirectoryJobComponent = "home-directory"

// DirectoryJobTTL is how long a finished directory Job is kept when the
// provider could not delete it (the TTL controller deletes it then).
const DirectoryJobTTL = time.Hour

// SharedSource returns the source of the volume the shared claim is bound
// to, and the claim's UID (the executor's Splits).
func (c *Client) SharedSource(ctx context.Context, namespace, claim string) (migration.VolumeSource, string, error) {
	pvc, pv, err := c.sharedVolume(ctx, namespace, claim)
	if err != nil {
		return migration.VolumeSource{}, "", err
	}
	src, err := volumeSourceOf(pv)
	if err != nil {
		return migration.VolumeSource{}, "", fmt.Errorf("the shared claim %s/%s: %w", namespace, claim, err)
	}
	return src, string(pvc.UID), nil
}

// sharedVolume is the shared claim, which must be bound, and its volume,
// which must be bound to it.
func (c *Client) sharedVolume(ctx context.Context, namespace, claim string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, error) {
	pvc, err := c.GetClaim(ctx, namespace, claim)
	switch {
	case err != nil:
		return nil, nil, err
	case pvc == nil:
		return nil, nil, fmt.Errorf("the shared claim %s/%s does not exist", namespace, claim)
	case pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "":
		return nil, nil, fmt.Errorf("the shared claim %s/%s is not bound to a volume (phase %s)", namespace, claim, orNone(string(pvc.Status.Phase)))
	}
	pv, err := c.findVolume(ctx, pvc.Spec.VolumeName)
	switch {
	case err != nil:
		return nil, nil, err
	case pv == nil:
		return nil, nil, fmt.Errorf("the shared claim %s/%s names volume %s, which does not exist", namespace, claim, pvc.Spec.VolumeName)
	case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID:
		return nil, nil, fmt.Errorf("volume %s is not bound to the shared claim %s/%s", pv.Name, namespace, claim)
	}
	return pvc, pv, nil
}

// volumeSourceOf is what a split needs of a volume's source: a host path,
// in-tree NFS, or a CSI volume; any other kind is an error naming it.
func volumeSourceOf(pv *corev1.PersistentVolume) (migration.VolumeSource, error) {
	s := pv.Spec.PersistentVolumeSource
	switch {
	case s.HostPath != nil:
		return migration.VolumeSource{HostPath: s.HostPath.Path}, nil
	case s.NFS != nil:
		return migration.VolumeSource{NFS: &migration.NFSSource{Server: s.NFS.Server, Path: s.NFS.Path}}, nil
	case s.CSI != nil:
		return migration.VolumeSource{CSI: &migration.CSISource{Driver: s.CSI.Driver, Handle: s.CSI.VolumeHandle, Attributes: maps.Clone(s.CSI.VolumeAttributes)}}, nil
	}
	return migration.VolumeSource{}, fmt.Errorf("its volume %s is a %s volume; a directory of it cannot be a volume of its own (host path, NFS and CSI volumes can)", pv.Name, sourceKind(s))
}

// sourceKind is the name of the field that holds a volume's source, as
// the API spells it (local, awsElasticBlockStore, ...).
func sourceKind(s corev1.PersistentVolumeSource) string {
	b, err := json.Marshal(s)
	if err != nil {
		return "unknown"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || len(m) == 0 {
		return "sourceless"
	}
	return strings.Join(slices.Sorted(maps.Keys(m)), "+")
}

// PrepareDirectory makes sure job's directory exists on the shared claim
// (the executor's Splits): a Job mounting the shared claim runs the script of the
// layout's init container (kubespawner.SharedDirectoryCommand), which
// makes a missing directory with job's owner and mode and leaves an
// existing one as it is, as root with only the init container's
// capabilities. A Job of its name left from before is replaced; the Job is
// deleted when it ended.
func (c *Client) PrepareDirectory(ctx context.Context, job migration.Split) error {
	return c.runDirectoryJob(ctx, DirectoryJob(job, c.StepTimeout), job.Directory, job.Shared, fmt.Sprintf("no volume or claim was made for %s", job.User))
}

// runDirectoryJob runs directory Job j (of directory dir of claim shared)
// to its end, replacing one of its name left from before, and deletes it
// when it ended; a failure says its pod's message and what was not done
// (nothingMade).
func (c *Client) runDirectoryJob(ctx context.Context, j *batchv1.Job, dir, shared, nothingMade string) error {
	if err := c.replaceJob(ctx, j); err != nil {
		return err
	}
	var done *migration.Job
	err := c.poll(ctx, func() (bool, error) {
		got, err := c.getJob(ctx, j.Namespace, j.Name)
		if err != nil || got == nil {
			if err == nil {
				err = fmt.Errorf("the Job %s/%s that makes directory %q of %s disappeared; apply again", j.Namespace, j.Name, dir, shared)
			}
			return false, err
		}
		v := jobView(got)
		if v.Succeeded || v.Failed {
			done = v
		}
		return done != nil, nil
	}, fmt.Sprintf("the Job %s/%s that makes directory %q of %s did not finish", j.Namespace, j.Name, dir, shared))
	if err != nil {
		if done == nil && ctx.Err() == nil {
			if state := c.jobPodState(ctx, j.Namespace, j.Name); state != "" {
				err = fmt.Errorf("%w (its pod: %s)", err, state)
			}
		}
		// Left for kubectl when it did not finish; replaced by the next apply.
		return err
	}
	defer func() { _ = c.DeleteJob(context.WithoutCancel(ctx), j.Namespace, j.Name) }()
	if done.Succeeded {
		return nil
	}
	msg, _ := c.terminationMessage(ctx, j.Namespace, j.Name, done)
	return fmt.Errorf("the Job %s/%s that makes directory %q of %s failed (%s): %s; %s. Fix the cause and apply again",
		j.Namespace, j.Name, dir, shared, orNone(done.Reason), orNone(strings.TrimSpace(msg)), nothingMade)
}

// jobPodState says what the pods of Job name are waiting for, for an error.
func (c *Client) jobPodState(ctx context.Context, namespace, name string) string {
	pods, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: JobNameLabel + "=" + name})
	if err != nil {
		return ""
	}
	var out []string
	for _, p := range pods.Items {
		s := string(p.Status.Phase)
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
				s += ", not scheduled: " + cond.Message
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				s += ", waiting: " + w.Reason + " " + w.Message
			}
		}
		out = append(out, p.Name+" "+s)
	}
	return strings.Join(out, "; ")
}

// DirectoryJobName is the Job that makes the directory of the split to
// claim: the same name every time, so that a Job left from an earlier
// apply is found and replaced.
func DirectoryJobName(claim string) string {
	return "home-dir-" + strings.TrimPrefix(migration.JobName(claim), "home-copy-")
}

// DirectoryJob is the Job that makes job's directory on the shared claim
// when it is missing: the shared claim mounted where the layout's init
// container mounts it, the init container's script and environment, root
// with only its capabilities, no retry, and a deadline of timeout.
func DirectoryJob(job migration.Split, timeout time.Duration) *batchv1.Job {
	cmd, vars := kubespawner.SharedDirectoryCommand(kubespawner.Directory{Path: job.Directory, MovedFrom: job.MovedFrom, UID: job.UID, GID: job.GID, Mode: job.Mode})
	env := make([]corev1.EnvVar, 0, len(vars))
	for _, v := range vars {
		env = append(env, corev1.EnvVar{Name: v.Name, Value: v.Value})
	}
	caps := make([]corev1.Capability, 0, len(kubespawner.SharedDirectoryCapabilities))
	for _, c := range kubespawner.SharedDirectoryCapabilities {
		caps = append(caps, corev1.Capability(c))
	}
	sec := rootJobSecurity(caps)
	root := int64(0)
	sec.RunAsGroup = &root
	zero, no := int32(0), false
	ttl, deadline := int32(DirectoryJobTTL/time.Second), int64(timeout/time.Second)
	if deadline < 1 {
		deadline = 1
	}
	labels := map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy, kubespawner.LabelAppComponent: DirectoryJobComponent}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: DirectoryJobName(job.Spec.Name), Namespace: job.Spec.Namespace, Labels: labels,
			Annotations: map[string]string{"jupyter-infra.github.io/directory-of": job.Shared, "jupyter-infra.github.io/directory": job.Directory}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            &zero,
			TTLSecondsAfterFinished: &ttl,
			ActiveDeadlineSeconds:   &deadline,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{kubespawner.LabelAppComponent: DirectoryJobComponent}},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: &no,
					Containers: []corev1.Container{{
						Name:                     "directory",
						Image:                    job.Image,
						Command:                  cmd,
						Env:                      env,
						VolumeMounts:             []corev1.VolumeMount{{Name: kubespawner.HomeVolumeName, MountPath: kubespawner.SharedRoot}},
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext:          sec,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
					}},
					Volumes: []corev1.Volume{{Name: kubespawner.HomeVolumeName, VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: job.Shared}}}},
				},
			},
		},
	}
}

// SplitVolume returns the split's volume as it is now; nil when none
// (the executor's Splits). A record that cannot be read is no record: the volume
// is not this split's.
func (c *Client) SplitVolume(ctx context.Context, name string) (*migration.SplitVolume, error) {
	pv, err := c.findVolume(ctx, name)
	if err != nil || pv == nil {
		return nil, err
	}
	v := &migration.SplitVolume{Record: splitRecordOf(pv.Annotations), Phase: string(pv.Status.Phase)}
	if ref := pv.Spec.ClaimRef; ref != nil {
		v.ClaimRefName, v.ClaimRefUID = ref.Name, string(ref.UID)
	}
	return v, nil
}

// SplitClaim returns the user's claim as the split sees it; nil when none
// (the executor's Splits).
func (c *Client) SplitClaim(ctx context.Context, namespace, name string) (*migration.SplitClaim, error) {
	pvc, err := c.GetClaim(ctx, namespace, name)
	if err != nil || pvc == nil {
		return nil, err
	}
	return &migration.SplitClaim{UID: string(pvc.UID), Record: splitRecordOf(pvc.Annotations), Phase: string(pvc.Status.Phase), VolumeName: pvc.Spec.VolumeName,
		Copied: pvc.Annotations[migration.SplitCopiedAnnotation], Deleting: pvc.DeletionTimestamp != nil}, nil
}

func splitRecordOf(ann map[string]string) *migration.SplitRecord {
	s, ok := ann[migration.SplitAnnotation]
	if !ok {
		return nil
	}
	rec, err := migration.DecodeSplitRecord(s)
	if err != nil {
		return nil
	}
	return &rec
}

// CreateSplitVolume creates volume rec.Volume on src (the executor's Splits):
// reclaim policy Retain, mode spec.Mode, capacity spec.Size, no storage
// class, a claimRef to rec's claim by namespace, name and UID, the record, and
// what else the shared volume says about mounting the same file system
// (mount options, node affinity, a CSI volume's fsType and secrets). A
// host path must be a directory that exists: kubelet then refuses to
// mount a missing one instead of the container runtime making it empty.
func (c *Client) CreateSplitVolume(ctx context.Context, rec migration.SplitRecord, src migration.VolumeSource, spec claims.Spec, claimUID string) error {
	size, err := resource.ParseQuantity(spec.Size)
	if err != nil {
		return fmt.Errorf("the size %q of %s/%s: %w", spec.Size, rec.Namespace, rec.Claim, err)
	}
	sharedPVC, shared, err := c.sharedVolume(ctx, rec.Namespace, rec.Shared)
	if err != nil {
		return err
	}
	if string(sharedPVC.UID) != rec.SharedUID {
		return fmt.Errorf("the shared claim %s/%s was made again since the move of %s began (UID %s, then %s); no volume was made", rec.Namespace, rec.Shared, rec.Claim, sharedPVC.UID, rec.SharedUID)
	}
	pv := SplitPersistentVolume(rec, src, spec.Mode, size, shared, claimUID)
	if pv == nil {
		return fmt.Errorf("volume %s: no source for directory %q", rec.Volume, rec.Directory)
	}
	err = c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Decided again from what the cluster shows: an earlier attempt of
			// this create (its answer lost) is found as this split's volume.
			return fmt.Errorf("volume %s: %w", pv.Name, claims.ErrExists)
		}
		return err
	})
	if errors.Is(err, claims.ErrExists) {
		return err
	}
	return explainIf(err, "create", "persistentvolumes", "")
}

// SplitPersistentVolume is the split's volume on src, reserved for rec's
// claim by namespace, name and UID; shared, the shared claim's volume, gives
// the mount options, node affinity and CSI settings of the same file
// system. Nil when src is empty.
func SplitPersistentVolume(rec migration.SplitRecord, src migration.VolumeSource, mode string, size resource.Quantity, shared *corev1.PersistentVolume, claimUID string) *corev1.PersistentVolume {
	var s corev1.PersistentVolumeSource
	switch {
	case src.HostPath != "":
		dir := corev1.HostPathDirectory
		s.HostPath = &corev1.HostPathVolumeSource{Path: src.HostPath, Type: &dir}
	case src.NFS != nil:
		s.NFS = &corev1.NFSVolumeSource{Server: src.NFS.Server, Path: src.NFS.Path}
	case src.CSI != nil:
		s.CSI = &corev1.CSIPersistentVolumeSource{Driver: src.CSI.Driver, VolumeHandle: src.CSI.Handle, VolumeAttributes: maps.Clone(src.CSI.Attributes)}
		if o := shared.Spec.CSI; o != nil && o.Driver == src.CSI.Driver {
			s.CSI.FSType, s.CSI.NodeStageSecretRef, s.CSI.NodePublishSecretRef = o.FSType, o.NodeStageSecretRef, o.NodePublishSecretRef
		}
	default:
		return nil
	}
	fs := corev1.PersistentVolumeFilesystem
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        rec.Volume,
			Labels:      map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy},
			Annotations: map[string]string{migration.SplitAnnotation: rec.Encode()},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.PersistentVolumeAccessMode(mode)},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			VolumeMode:                    &fs,
			MountOptions:                  slices.Clone(shared.Spec.MountOptions),
			NodeAffinity:                  shared.Spec.NodeAffinity.DeepCopy(),
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: rec.Namespace, Name: rec.Claim,
				UID: types.UID(claimUID)},
			PersistentVolumeSource: s,
		},
	}
}

// CreateSplitClaim creates the user's claim on the split's volume
// (the executor's Splits): built as HomeClaim builds a home, so that KubeSpawner
// adopts it, with no storage class (the binder matches it to the volume,
// and no default class is set on it), naming volume rec.Volume, with the
// record. A claim of that name that exists is claims.ErrExists.
func (c *Client) CreateSplitClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error {
	pvc, err := SplitClaimObject(rec, spec)
	if err != nil {
		return err
	}
	return c.createRecordedClaim(ctx, pvc)
}

// createRecordedClaim creates a move's claim, its record on it; one of
// that name that exists is claims.ErrExists (never taken over).
func (c *Client) createRecordedClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	err := c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, claims.ErrExists)
		}
		return err
	})
	if errors.Is(err, claims.ErrExists) {
		return err
	}
	return explainIf(err, "create", "persistentvolumeclaims", pvc.Namespace)
}

// SplitClaimObject is the user's claim of the split rec: HomeClaim's, with
// storage class "", volume rec.Volume and the record.
func SplitClaimObject(rec migration.SplitRecord, spec claims.Spec) (*corev1.PersistentVolumeClaim, error) {
	spec.Class = ""
	pvc, err := HomeClaim(spec)
	if err != nil {
		return nil, err
	}
	none, fs := "", corev1.PersistentVolumeFilesystem
	pvc.Spec.StorageClassName, pvc.Spec.VolumeName, pvc.Spec.VolumeMode = &none, rec.Volume, &fs
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[migration.SplitAnnotation] = rec.Encode()
	return pvc, nil
}

// findVolume returns a volume; nil when it does not exist.
func (c *Client) findVolume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	var pv *corev1.PersistentVolume
	err := c.Backoff.Retry(ctx, func() (err error) {
		pv, err = c.Kube.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, Explain(err, "get", "persistentvolumes", "")
	}
	return pv, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
