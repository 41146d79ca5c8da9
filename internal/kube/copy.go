package kube

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// CopyTimeout bounds how long one apply waits for a copy Job. A copy that
// takes longer goes on; the next apply waits again and then verifies it.
var CopyTimeout = 2 * time.Hour

// JobNameLabel is the label the Job controller puts on a Job's pods.
const JobNameLabel = "batch.kubernetes.io/job-name"

// Copy is one user's copy job.
type Copy struct {
	User         string
	Namespace    string
	Source       string // the home claim, never changed but for its record annotation
	Target       string // the new claim
	To           string // its access mode
	StorageClass string // its class; "" for the cluster default
	Capacity     string // at least; the source's request when larger
	Image        string // with rsync
	ExtraLabels  map[string]string
}

// Copy moves one home to a new claim by copying, step by step, deciding
// each step from the cluster (migration.NextCopy), so that it resumes
// wherever an earlier run stopped. The source claim is never deleted.
func (c *Client) Copy(ctx context.Context, job Copy) (migration.Step, error) {
	return c.runSteps(job.User, "copy of "+job.Source, migration.CopyStepOf, migration.StepSwitched, func() (migration.Op, func() error, error) {
		src, err := c.GetClaim(ctx, job.Namespace, job.Source)
		if err != nil {
			return "", nil, err
		}
		if src == nil {
			return "", nil, fmt.Errorf("source claim %s/%s does not exist", job.Namespace, job.Source)
		}
		var rec *migration.CopyRecord
		if s, ok := src.Annotations[migration.CopyAnnotation]; ok {
			if rec, err = migration.DecodeCopyRecord(s); err != nil {
				return "", nil, err
			}
		}
		target, err := c.GetClaim(ctx, job.Namespace, job.Target)
		if err != nil {
			return "", nil, err
		}
		var jv *migration.Job
		if rec != nil && rec.Step == migration.StepCopying {
			j, err := c.getJob(ctx, job.Namespace, migration.JobName(job.Source))
			if err != nil {
				return "", nil, err
			}
			if j != nil {
				jv = jobView(j)
			}
		}
		copyOf := ""
		if target != nil {
			copyOf = target.Annotations[migration.CopyOfAnnotation]
		}
		op, err := migration.NextCopy(rec, job.Source, target != nil, copyOf, jv)
		return op, func() error { return c.copyOp(ctx, job, op, src, rec) }, err
	})
}

func (c *Client) copyOp(ctx context.Context, job Copy, op migration.Op, src *corev1.PersistentVolumeClaim, rec *migration.CopyRecord) error {
	next := migration.CopyRecord{User: job.User, Target: job.Target, To: job.To}
	if rec != nil {
		next = *rec
	}
	switch op {
	case migration.OpCreateTarget:
		pvc, err := copyTarget(job, src)
		if err != nil {
			return err
		}
		if _, err := c.CreateClaim(ctx, pvc); err != nil {
			return err
		}
		next.Step = migration.StepTargetCreated
		return c.annotateClaim(ctx, job.Namespace, job.Source, migration.CopyAnnotation, next.Encode())
	case migration.OpStartCopy:
		if err := c.createJob(ctx, CopyJob(job)); err != nil {
			return err
		}
		next.Step, next.Job = migration.StepCopying, migration.JobName(job.Source)
		return c.annotateClaim(ctx, job.Namespace, job.Source, migration.CopyAnnotation, next.Encode())
	case migration.OpWaitCopy:
		return c.waitJob(ctx, job.Namespace, migration.JobName(job.Source))
	case migration.OpVerify:
		v, err := c.verification(ctx, job.Namespace, migration.JobName(job.Source))
		if err != nil {
			return err
		}
		next.Step, next.Files, next.Bytes = migration.StepVerified, v.Files, v.Bytes
		if err := c.annotateClaim(ctx, job.Namespace, job.Source, migration.CopyAnnotation, next.Encode()); err != nil {
			return err
		}
		return c.deleteJob(ctx, job.Namespace, migration.JobName(job.Source))
	case migration.OpSwitch:
		mounted, err := c.mountedExcept(ctx, job.Namespace, migration.JobName(job.Source))
		if err != nil {
			return err
		}
		if mounted[job.Source] {
			// A server started during the copy may have written to the old
			// home: copy again (rsync sends only what changed) before switching.
			next.Step = migration.StepTargetCreated
			if err := c.annotateClaim(ctx, job.Namespace, job.Source, migration.CopyAnnotation, next.Encode()); err != nil {
				return err
			}
			return fmt.Errorf("a server started on %s during the copy; the user keeps the old home for now. Stop the server and apply again: the copy is brought up to date, then switched", job.Source)
		}
		next.Step = migration.StepSwitched
		return c.annotateClaim(ctx, job.Namespace, job.Source, migration.CopyAnnotation, next.Encode())
	}
	return fmt.Errorf("unknown step %q", op)
}

// copyTarget is the new claim: the source's KubeSpawner labels and
// annotations, the new mode and class, the larger of the configured
// capacity and the source's request, and the name of its source.
func copyTarget(job Copy, src *corev1.PersistentVolumeClaim) (*corev1.PersistentVolumeClaim, error) {
	size, err := resource.ParseQuantity(job.Capacity)
	if err != nil {
		return nil, err
	}
	if q, ok := src.Spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Cmp(size) > 0 {
		size = q
	}
	labels := map[string]string{}
	for k, v := range src.Labels {
		labels[k] = v
	}
	for k, v := range job.ExtraLabels {
		labels[k] = v
	}
	labels["app.kubernetes.io/managed-by"] = "terraform-provider-jupyter"
	ann := map[string]string{migration.CopyOfAnnotation: job.Source}
	for _, k := range []string{"hub.jupyter.org/username", "hub.jupyter.org/servername"} {
		if v, ok := src.Annotations[k]; ok {
			ann[k] = v
		}
	}
	return NewClaim(metav1.ObjectMeta{Name: job.Target, Namespace: job.Namespace, Labels: labels, Annotations: ann},
		job.To, job.StorageClass, size), nil
}

// CopyJob is the Job that copies one home: the source mounted read-only at
// /src, the target at /dst, migration.CopyScript run as root with only the
// capabilities that keeping ownership and permissions needs.
func CopyJob(job Copy) *batchv1.Job {
	backoff, root, no, yes := int32(2), int64(0), false, true
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: migration.JobName(job.Source), Namespace: job.Namespace,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "terraform-provider-jupyter", "app.kubernetes.io/component": "home-copy"},
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
						SecurityContext: &corev1.SecurityContext{
							RunAsUser: &root, RunAsNonRoot: &no, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{
								Drop: []corev1.Capability{"ALL"},
								Add:  []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID"},
							},
						},
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

func (c *Client) deleteJob(ctx context.Context, namespace, name string) error {
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

func (c *Client) waitJob(ctx context.Context, namespace, name string) error {
	deadline := time.Now().Add(CopyTimeout)
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
			return fmt.Errorf("copy Job %s/%s is still running after %s; it goes on: apply again to wait for it and verify it", namespace, name, CopyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// verification reads the counts the copy Job wrote to its termination log.
func (c *Client) verification(ctx context.Context, namespace, jobName string) (migration.Verification, error) {
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

// mountedExcept is MountedClaims without the pods of one Job.
func (c *Client) mountedExcept(ctx context.Context, namespace, jobName string) (map[string]bool, error) {
	out := map[string]bool{}
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		var page *corev1.PodList
		err := c.Backoff.Retry(ctx, func() (err error) {
			page, err = c.Kube.CoreV1().Pods(namespace).List(ctx, opts)
			return err
		})
		if err != nil {
			return nil, Explain(err, "list", "pods", namespace)
		}
		for _, p := range page.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || jobName != "" && p.Labels[JobNameLabel] == jobName {
				continue
			}
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					out[v.PersistentVolumeClaim.ClaimName] = true
				}
			}
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}

func (c *Client) annotateClaim(ctx context.Context, namespace, name, key, value string) error {
	return c.patchClaim(ctx, namespace, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
}
