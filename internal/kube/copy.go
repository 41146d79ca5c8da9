package kube

import (
	"context"
	"encoding/json"
	"fmt"
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

// JobNameLabel is the label the Job controller puts on a Job's pods.
const JobNameLabel = "batch.kubernetes.io/job-name"

// Copy is one user's copy (migration.Copy).
type Copy = migration.Copy

// Client is the cluster the executor's steps run against.

// Job returns a Job as the copy's steps see it; nil when there is none
// (the executor's Migrations).
func (c *Client) Job(ctx context.Context, namespace, name string) (*migration.Job, error) {
	j, err := c.getJob(ctx, namespace, name)
	if err != nil || j == nil {
		return nil, err
	}
	return jobView(j), nil
}

// CreateCopyTarget creates the copy's target claim (the executor's Migrations).
func (c *Client) CreateCopyTarget(ctx context.Context, job Copy, src claims.Claim, id string) (string, error) {
	pvc, err := copyTarget(job, src, id)
	if err != nil {
		return "", err
	}
	created, err := c.createOwnClaim(ctx, pvc, migration.CopyIDAnnotation, id)
	if err != nil {
		return "", err
	}
	return string(created.UID), nil
}

// StartCopyJob replaces any Job of the copy Job's name by a new copy Job
// (the executor's Migrations).
func (c *Client) StartCopyJob(ctx context.Context, job Copy) error {
	return c.replaceJob(ctx, CopyJob(job))
}

// copyTarget is the new claim: the source's KubeSpawner labels and
// annotations, the new mode and class, the larger of the configured
// capacity and the source's request, and the name of its source.
func copyTarget(job Copy, src claims.Claim, id string) (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(job.Capacity)
	if err != nil {
		return nil, err
	}
	if q, err := resource.ParseQuantity(src.Requested); err == nil && q.Cmp(size) > 0 {
		size = q
	}
	labels := map[string]string{}
	for k, v := range src.Labels {
		labels[k] = v
	}
	for k, v := range job.ExtraLabels {
		labels[k] = v
	}
	labels[kubespawner.LabelAppManagedBy] = claims.ManagedBy
	labels[migration.CopyOfLabel] = migration.CopyOfLabelValue(job.Source)
	ann := map[string]string{migration.CopyOfAnnotation: job.Source, migration.CopyIDAnnotation: id, migration.CopyOfUIDAnnotation: src.UID}
	for _, k := range []string{kubespawner.AnnotationUsername, kubespawner.AnnotationServername} {
		if v, ok := src.Annotations[k]; ok {
			ann[k] = v
		}
	}
	return NewClaim(metav1.ObjectMeta{Name: job.Target, Namespace: job.Namespace, Labels: labels, Annotations: ann},
		job.To, job.StorageClass, size), nil
}

// createOwnClaim creates pvc. A claim of that name that exists already is
// returned only when it carries annotation key = id (this step created it
// before a stop); otherwise the create fails.
func (c *Client) createOwnClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim, key, id string) (*corev1.PersistentVolumeClaim, error) {
	var out *corev1.PersistentVolumeClaim
	err := c.Backoff.Retry(ctx, func() (err error) {
		out, err = c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			out, err = c.Kube.CoreV1().PersistentVolumeClaims(pvc.Namespace).Get(ctx, pvc.Name, metav1.GetOptions{})
			if err == nil && out.Annotations[key] != id {
				return fmt.Errorf("claim %s/%s exists already and was not created by this copy; nothing is copied into it", pvc.Namespace, pvc.Name)
			}
		}
		return err
	})
	return out, explainIf(err, "create", "persistentvolumeclaims", pvc.Namespace)
}

// VerifyCopy runs the verification Job (migration.VerifyScript) for a
// finished copy, now, and reports whether target holds everything source
// holds (the executor's Cluster). An earlier verification Job is replaced.
func (c *Client) VerifyCopy(ctx context.Context, namespace, source, target, image string) (bool, string, error) {
	name := migration.VerifyJobName(source)
	// A verification pod cannot mount a home that is not ReadWriteMany while
	// the user's server uses it: say so rather than wait for the pod.
	tgt, err := c.Claim(ctx, namespace, target)
	if err != nil {
		return false, "", err
	}
	if tgt == nil {
		return false, "the new home " + target + " does not exist", nil
	}
	if !slices.Contains(tgt.AccessModes, string(corev1.ReadWriteMany)) {
		if pods, err := c.MountedBy(ctx, namespace, target, ""); err != nil {
			return false, "", err
		} else if len(pods) > 0 {
			return false, fmt.Sprintf("the new home %s is in use by %s and cannot be mounted for the verification; stop the server and apply again", target, strings.Join(pods, ", ")), nil
		}
	}
	j := VerifyJob(namespace, source, target, image, c.CopyTimeout)
	if err := c.replaceJob(ctx, j); err != nil {
		return false, "", err
	}
	defer func() { _ = c.DeleteJob(context.WithoutCancel(ctx), namespace, name) }()
	if err := c.WaitJob(ctx, namespace, name); err != nil {
		return false, "", err
	}
	got, err := c.getJob(ctx, namespace, name)
	if err != nil || got == nil {
		return false, "", fmt.Errorf("verification Job %s/%s: %v", namespace, name, err)
	}
	v := jobView(got)
	detail := "verification Job " + name + " failed"
	if msg, err := c.terminationMessage(ctx, namespace, name, v); err == nil && msg != "" {
		detail = msg
	}
	return v.Succeeded, detail, nil
}

// VerifyJob is the read-only Job that checks a finished copy again
// (migration.VerifyScript) before its source is deleted: the copy Job's pod
// with both claims mounted read-only, no retry, and a deadline of timeout.
func VerifyJob(namespace, source, target, image string, timeout time.Duration) *batchv1.Job {
	j := CopyJob(Copy{Namespace: namespace, Source: source, Target: target, Image: image})
	j.Name = migration.VerifyJobName(source)
	zero, deadline := int32(0), int64(timeout/time.Second)
	j.Spec.BackoffLimit, j.Spec.ActiveDeadlineSeconds = &zero, &deadline
	j.Labels["app.kubernetes.io/component"], j.Spec.Template.Labels["app.kubernetes.io/component"] = "home-verify", "home-verify"
	pod := &j.Spec.Template.Spec
	pod.Containers[0].Command = []string{"sh", "-c", migration.VerifyScript}
	pod.Containers[0].VolumeMounts[1].ReadOnly = true
	pod.Volumes[1].PersistentVolumeClaim.ReadOnly = true
	return j
}

// replaceJob creates j after deleting any Job of its name and waiting until
// it is gone, so that nothing an earlier Job reported is read as j's.
func (c *Client) replaceJob(ctx context.Context, j *batchv1.Job) error {
	if err := c.DeleteJob(ctx, j.Namespace, j.Name); err != nil {
		return err
	}
	if err := c.waitJobGone(ctx, j.Namespace, j.Name); err != nil {
		return err
	}
	return c.createJob(ctx, j)
}

func (c *Client) waitJobGone(ctx context.Context, namespace, name string) error {
	return c.poll(ctx, func() (bool, error) {
		j, err := c.getJob(ctx, namespace, name)
		return j == nil, err
	}, fmt.Sprintf("Job %s/%s was not deleted", namespace, name))
}

// terminationMessage is what a pod of Job name wrote to its termination
// log: a pod that ended as the Job did (succeeded, or failed), as job says.
func (c *Client) terminationMessage(ctx context.Context, namespace, name string, job *migration.Job) (string, error) {
	var pods *corev1.PodList
	err := c.Backoff.Retry(ctx, func() (err error) {
		pods, err = c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: JobNameLabel + "=" + name})
		return err
	})
	if err != nil {
		return "", Explain(err, "list", "pods", namespace)
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && (t.ExitCode == 0) == job.Succeeded {
				return t.Message, nil
			}
		}
	}
	return "", nil
}

// JobCapabilities are the only capabilities of the copy and verification
// Jobs' root (all others dropped, no privilege escalation): what keeping
// ownership, permissions, times, ACLs and extended attributes of files root
// does not own needs. CHOWN sets owners, FOWNER sets modes, ACLs, xattrs
// and times on files root does not own, FSETID keeps setuid and setgid
// bits, and DAC_OVERRIDE reads and writes every file and reads and
// searches every directory whatever their modes (the kernel's
// generic_permission; DAC_READ_SEARCH would add nothing to it but
// open_by_handle_at). Pod Security's baseline level allows every one of
// them, so the pods are admitted where baseline is enforced; restricted
// admits no root container, and safety.CheckPodSecurity fails such a plan.
// No SYS_ADMIN: trusted.* attributes are neither read nor written.
var JobCapabilities = []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"}

// CopyJob is the Job that copies one home: the source mounted read-only at
// /src, the target at /dst, migration.CopyScript run as root with only
// JobCapabilities.
func CopyJob(job Copy) *batchv1.Job {
	backoff := int32(2)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: migration.JobName(job.Source), Namespace: job.Namespace,
			Labels:      map[string]string{kubespawner.LabelAppManagedBy: claims.ManagedBy, kubespawner.LabelAppComponent: "home-copy"},
			Annotations: map[string]string{migration.CopyOfAnnotation: job.Source, "jupyter-infra.github.io/copy-to": job.Target}},
		Spec: batchv1.JobSpec{
			BackoffLimit: &backoff,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/component": "home-copy"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:    "copy",
						Image:   job.Image,
						Command: []string{"sh", "-c", migration.CopyScript},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "src", MountPath: "/src", ReadOnly: true},
							{Name: "dst", MountPath: "/dst"},
						},
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
						SecurityContext:          rootJobSecurity(JobCapabilities),
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
					}},
					Volumes: []corev1.Volume{
						{Name: "src", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: job.Source, ReadOnly: true}}},
						{Name: "dst", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: job.Target}}},
					},
				},
			},
		},
	}
}

// rootJobSecurity is the security context of the provider's Jobs: root
// with only caps (every other capability dropped), no privilege
// escalation, a read-only root file system.
func rootJobSecurity(caps []corev1.Capability) *corev1.SecurityContext {
	root, no, yes := int64(0), false, true
	return &corev1.SecurityContext{
		RunAsUser: &root, RunAsNonRoot: &no, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: slices.Clone(caps)},
	}
}

func jobView(j *batchv1.Job) *migration.Job {
	v := &migration.Job{}
	for _, cond := range j.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			v.Succeeded = true
		case batchv1.JobFailed:
			v.Failed, v.Reason = true, cond.Reason
		}
	}
	return v
}

func (c *Client) getJob(ctx context.Context, namespace, name string) (*batchv1.Job, error) {
	var j *batchv1.Job
	err := c.Backoff.Retry(ctx, func() (err error) {
		j, err = c.Kube.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, Explain(err, "get", "jobs", namespace)
	}
	return j, nil
}

func (c *Client) createJob(ctx context.Context, j *batchv1.Job) error {
	err := c.Backoff.Retry(ctx, func() error {
		_, err := c.Kube.BatchV1().Jobs(j.Namespace).Create(ctx, j, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // an earlier apply started it
		}
		return err
	})
	return explainIf(err, "create", "jobs", j.Namespace)
}

// DeleteJob deletes a Job in the background; one that is gone is not an
// error (the executor's Migrations).
func (c *Client) DeleteJob(ctx context.Context, namespace, name string) error {
	policy := metav1.DeletePropagationBackground
	err := c.Backoff.Retry(ctx, func() error {
		err := c.Kube.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	return explainIf(err, "delete", "jobs", namespace)
}

// WaitJob waits until a Job succeeded or failed (the executor's Migrations).
func (c *Client) WaitJob(ctx context.Context, namespace, name string) error {
	deadline := time.Now().Add(c.CopyTimeout)
	for {
		j, err := c.getJob(ctx, namespace, name)
		if err != nil {
			return err
		}
		if j == nil {
			return fmt.Errorf("copy Job %s/%s disappeared; apply again to start it again", namespace, name)
		}
		if v := jobView(j); v.Succeeded || v.Failed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("copy Job %s/%s is still running after %s; it goes on: apply again to wait for it and verify it", namespace, name, c.CopyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// CopyVerification reads the counts the copy Job wrote to its termination
// log (the executor's Migrations).
func (c *Client) CopyVerification(ctx context.Context, namespace, jobName string) (migration.Verification, error) {
	var pods *corev1.PodList
	err := c.Backoff.Retry(ctx, func() (err error) {
		pods, err = c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: JobNameLabel + "=" + jobName})
		return err
	})
	if err != nil {
		return migration.Verification{}, Explain(err, "list", "pods", namespace)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "copy" && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				return migration.ParseVerification(cs.State.Terminated.Message)
			}
		}
	}
	return migration.Verification{}, fmt.Errorf("copy Job %s/%s succeeded, but no pod of it with the verification record is left; delete the Job and apply again to copy and verify again", namespace, jobName)
}

// WriteCopyRecord writes record r on source if the record there is still
// expected (its encoded value; "" for none), the one the step decided from,
// and returns the value written. Other changes to the claim (a controller
// updating it) do not matter: the write is retried over them; a record
// that changed (another apply moved the copy on) is never overwritten.
func (c *Client) WriteCopyRecord(ctx context.Context, namespace, source, expected string, r migration.CopyRecord) (string, error) {
	value := r.Encode()
	err := c.Backoff.Retry(ctx, func() error {
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, source, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pvc.Annotations[migration.CopyAnnotation] != expected {
			// Not retried: the record changed since this step read it.
			return fmt.Errorf("the copy record on %s/%s changed since this step read it (another apply at the same time?); nothing more was done. Apply again", namespace, source)
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": pvc.ResourceVersion,
			"annotations": map[string]any{migration.CopyAnnotation: value}}})
		if err != nil {
			return err
		}
		_, err = c.Kube.CoreV1().PersistentVolumeClaims(namespace).Patch(ctx, source, types.MergePatchType, body, metav1.PatchOptions{})
		return err // a conflict (the claim changed in between) is retried: the record is checked again
	})
	if err != nil {
		return "", explainIf(err, "patch", "persistentvolumeclaims", namespace)
	}
	return value, nil
}

// AnnotateClaim sets one annotation on a claim (the executor's Migrations).
func (c *Client) AnnotateClaim(ctx context.Context, namespace, name, key, value string) error {
	return c.patchClaim(ctx, namespace, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
}
