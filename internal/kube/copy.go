package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/execute"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

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
	watched := false // this run started the Job, or saw it unfinished
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
				// A Job seen finished the first time this run looks, and not
				// started by it, finished before: its check says nothing of
				// what the user wrote since, so the copy runs again.
				jv = jobView(j)
				jv.Stale = (jv.Succeeded || jv.Failed) && !watched
				watched = watched || !jv.Succeeded && !jv.Failed
			}
		}
		tv := migration.Target{}
		if target != nil {
			tv = migration.Target{Exists: true, CopyOf: target.Annotations[migration.CopyOfAnnotation],
				CopyID: target.Annotations[migration.CopyIDAnnotation], UID: string(target.UID)}
		}
		op, err := migration.NextCopy(rec, job.Source, tv, jv)
		return op, func() error { return c.copyOp(ctx, job, op, src, rec, &watched) }, err
	})
}

func (c *Client) copyOp(ctx context.Context, job Copy, op migration.Op, src *corev1.PersistentVolumeClaim, rec *migration.CopyRecord, watched *bool) error {
	st := &copyStep{ctx: ctx, c: c, job: job, src: src, written: src.Annotations[migration.CopyAnnotation], watched: watched,
		next: migration.CopyRecord{User: job.User, Target: job.Target, To: job.To}}
	if rec != nil {
		st.next = *rec
	}
	switch op {
	case migration.OpCreateTarget:
		return st.createTarget()
	case migration.OpStartCopy:
		return st.startCopy()
	case migration.OpRestartCopy:
		return st.restartCopy()
	case migration.OpWaitCopy:
		return c.waitJob(ctx, job.Namespace, migration.JobName(job.Source))
	case migration.OpVerify:
		return st.verify()
	case migration.OpSwitch:
		return st.switchUser()
	}
	return fmt.Errorf("unknown step %q", op)
}

// copyStep is one operation of a copy and the record it moves on.
type copyStep struct {
	ctx     context.Context
	c       *Client
	job     Copy
	src     *corev1.PersistentVolumeClaim
	next    migration.CopyRecord
	written string // the record on the source the step decided from, then the one it wrote
	watched *bool  // this run started the Job
}

// record writes the record only over the one this step decided from: a
// record another apply moved on meanwhile is never rolled back.
func (st *copyStep) record() error {
	var err error
	st.written, err = st.c.writeCopyRecord(st.ctx, st.job.Namespace, st.job.Source, st.written, st.next)
	return err
}

// createTarget creates the target empty, carrying this copy's ID, which
// goes on the record first: a target is this copy's only by that ID.
func (st *copyStep) createTarget() error {
	if st.next.ID == "" {
		st.next.ID, st.next.Step = newCopyID(), migration.StepPending
		if err := st.record(); err != nil {
			return err
		}
	}
	pvc, err := copyTarget(st.job, st.src, st.next.ID)
	if err != nil {
		return err
	}
	created, err := st.c.createOwnClaim(st.ctx, pvc, migration.CopyIDAnnotation, st.next.ID)
	if err != nil {
		return err
	}
	st.next.Step, st.next.TargetUID = migration.StepTargetCreated, string(created.UID)
	return st.record()
}

// startCopy starts the Job. It writes into the target with rsync --delete:
// only into the claim this copy created, and not while a pod uses it. A Job
// of that name left from before (an apply stopped between its
// verification and its deletion) must not be taken for this one.
func (st *copyStep) startCopy() error {
	job := st.job
	if err := execute.Guard(st.ctx, st.c, safety.Step{Kind: safety.StepCopyInto, Why: "copy from " + job.Source, User: job.User,
		Namespace: job.Namespace, Claim: job.Target, UID: st.next.TargetUID, CreatedUID: st.next.TargetUID}, migration.JobName(job.Source)); err != nil {
		return err
	}
	if err := st.c.replaceJob(st.ctx, CopyJob(job)); err != nil {
		return err
	}
	*st.watched = true
	st.next.Step, st.next.Job = migration.StepCopying, migration.JobName(job.Source)
	return st.record()
}

// restartCopy drops a Job that finished before this run looked: the copy
// runs again.
func (st *copyStep) restartCopy() error {
	if err := st.c.deleteJob(st.ctx, st.job.Namespace, migration.JobName(st.job.Source)); err != nil {
		return err
	}
	st.next.Step = migration.StepTargetCreated
	return st.record()
}

// verify records the counts the Job reported and deletes the Job.
func (st *copyStep) verify() error {
	name := migration.JobName(st.job.Source)
	v, err := st.c.verification(st.ctx, st.job.Namespace, name)
	if err != nil {
		return err
	}
	st.next.Step, st.next.Files, st.next.Bytes = migration.StepVerified, v.Files, v.Bytes
	if err := st.record(); err != nil {
		return err
	}
	return st.c.deleteJob(st.ctx, st.job.Namespace, name)
}

// switchUser makes the copy the user's home, unless a server started on
// the old home during the copy: it may have written there, so the copy is
// brought up to date first (rsync sends only what changed).
func (st *copyStep) switchUser() error {
	job := st.job
	mounted, err := st.c.mountedExcept(st.ctx, job.Namespace, migration.JobName(job.Source))
	if err != nil {
		return err
	}
	if mounted[job.Source] {
		st.next.Step = migration.StepTargetCreated
		if err := st.record(); err != nil {
			return err
		}
		return fmt.Errorf("a server started on %s during the copy; the user keeps the old home for now. Stop the server and apply again: the copy is brought up to date, then switched", job.Source)
	}
	if err := st.c.annotateClaim(st.ctx, job.Namespace, job.Target, migration.CopySwitchedAnnotation, "true"); err != nil {
		return err
	}
	st.next.Step = migration.StepSwitched
	return st.record()
}

// copyTarget is the new claim: the source's KubeSpawner labels and
// annotations, the new mode and class, the larger of the configured
// capacity and the source's request, and the name of its source.
func copyTarget(job Copy, src *corev1.PersistentVolumeClaim, id string) (*corev1.PersistentVolumeClaim, error) {
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
	labels[kubespawner.LabelAppManagedBy] = claims.ManagedBy
	ann := map[string]string{migration.CopyOfAnnotation: job.Source, migration.CopyIDAnnotation: id, migration.CopyOfUIDAnnotation: string(src.UID)}
	for _, k := range []string{kubespawner.AnnotationUsername, kubespawner.AnnotationServername} {
		if v, ok := src.Annotations[k]; ok {
			ann[k] = v
		}
	}
	return NewClaim(metav1.ObjectMeta{Name: job.Target, Namespace: job.Namespace, Labels: labels, Annotations: ann},
		job.To, job.StorageClass, size), nil
}

// newCopyID is a copy's ID: random, so that no other copy's target carries it.
func newCopyID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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
// holds (execute.Cluster). An earlier verification Job is replaced.
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
	j := CopyJob(Copy{Namespace: namespace, Source: source, Target: target, Image: image})
	j.Name = name
	zero, deadline := int32(0), int64(c.CopyTimeout/time.Second)
	j.Spec.BackoffLimit, j.Spec.ActiveDeadlineSeconds = &zero, &deadline
	j.Labels["app.kubernetes.io/component"], j.Spec.Template.Labels["app.kubernetes.io/component"] = "home-verify", "home-verify"
	pod := &j.Spec.Template.Spec
	pod.Containers[0].Command = []string{"sh", "-c", migration.VerifyScript}
	pod.Containers[0].VolumeMounts[1].ReadOnly = true
	pod.Volumes[1].PersistentVolumeClaim.ReadOnly = true
	if err := c.replaceJob(ctx, j); err != nil {
		return false, "", err
	}
	defer func() { _ = c.deleteJob(context.WithoutCancel(ctx), namespace, name) }()
	if err := c.waitJob(ctx, namespace, name); err != nil {
		return false, "", err
	}
	got, err := c.getJob(ctx, namespace, name)
	if err != nil || got == nil {
		return false, "", fmt.Errorf("verification Job %s/%s: %v", namespace, name, err)
	}
	v := jobView(got)
	detail := "verification Job " + name + " failed"
	if msg, err := c.terminationMessage(ctx, namespace, name, v.Succeeded); err == nil && msg != "" {
		detail = msg
	}
	return v.Succeeded, detail, nil
}

// replaceJob creates j after deleting any Job of its name and waiting until
// it is gone, so that nothing an earlier Job reported is read as j's.
func (c *Client) replaceJob(ctx context.Context, j *batchv1.Job) error {
	if err := c.deleteJob(ctx, j.Namespace, j.Name); err != nil {
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
// log (of a pod that succeeded, or failed).
func (c *Client) terminationMessage(ctx context.Context, namespace, name string, succeeded bool) (string, error) {
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
			if t := cs.State.Terminated; t != nil && (t.ExitCode == 0) == succeeded {
				return t.Message, nil
			}
		}
	}
	return "", nil
}

// CopyJob is the Job that copies one home: the source mounted read-only at
// /src, the target at /dst, migration.CopyScript run as root with only the
// capabilities that keeping ownership and permissions needs.
func CopyJob(job Copy) *batchv1.Job {
	backoff, root, no, yes := int32(2), int64(0), false, true
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

// writeCopyRecord writes record r on source if the record there is still
// expected (its encoded value; "" for none), the one the step decided from,
// and returns the value written. Other changes to the claim (a controller
// updating it) do not matter: the write is retried over them; a record
// that changed (another apply moved the copy on) is never overwritten.
func (c *Client) writeCopyRecord(ctx context.Context, namespace, source, expected string, r migration.CopyRecord) (string, error) {
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

func (c *Client) annotateClaim(ctx context.Context, namespace, name, key, value string) error {
	return c.patchClaim(ctx, namespace, name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
}
