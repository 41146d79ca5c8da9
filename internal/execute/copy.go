package execute

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// Copy moves one home to a new claim by copying. The source claim is never
// deleted here (only its record annotation changes). It returns the step
// reached.
func (r Runner) Copy(ctx context.Context, job migration.Copy) (migration.Step, error) {
	watched := false // this run started the Job, or saw it unfinished
	return r.run(job.User, "copy of "+job.Source, migration.CopyStepOf, migration.StepSwitched, func() (migration.Op, func() error, error) {
		st, err := r.observeCopy(ctx, job, &watched)
		if err != nil {
			return "", nil, err
		}
		op, err := migration.NextCopy(job.Source, migration.CopyState{Record: st.rec, Target: st.target, Job: st.job, Watched: watched})
		return op, func() error { return r.copyOp(ctx, job, op, st, &watched) }, err
	})
}

// copyState is what one copy step decides from.
type copyState struct {
	src    claims.Claim
	rec    *migration.CopyRecord // nil before the first step
	target migration.Target
	job    *migration.Job // nil when there is none, or it is not looked for
}

// observeCopy reads the source, its record, the target and, while the
// record says the copy runs, the Job. A Job seen unfinished is watched by
// this run (migration.NextCopy trusts only such checks).
func (r Runner) observeCopy(ctx context.Context, job migration.Copy, watched *bool) (copyState, error) {
	var st copyState
	src, err := r.Cluster.Claim(ctx, job.Namespace, job.Source)
	if err != nil {
		return st, err
	}
	if src == nil {
		return st, fmt.Errorf("source claim %s/%s does not exist", job.Namespace, job.Source)
	}
	st.src = *src
	if s, ok := src.Annotations[migration.CopyAnnotation]; ok {
		if st.rec, err = migration.DecodeCopyRecord(s); err != nil {
			return st, err
		}
	}
	target, err := r.Cluster.Claim(ctx, job.Namespace, job.Target)
	if err != nil {
		return st, err
	}
	if target != nil {
		st.target = migration.Target{Exists: true, CopyOf: target.Annotations[migration.CopyOfAnnotation],
			CopyID: target.Annotations[migration.CopyIDAnnotation], UID: target.UID,
			Switched: target.Annotations[migration.CopySwitchedAnnotation] != ""}
	}
	if st.rec == nil || st.rec.Step != migration.StepCopying {
		return st, nil
	}
	if st.job, err = r.Cluster.Job(ctx, job.Namespace, migration.JobName(job.Source)); err != nil || st.job == nil {
		return st, err
	}
	*watched = *watched || !st.job.Succeeded && !st.job.Failed
	return st, nil
}

func (r Runner) copyOp(ctx context.Context, job migration.Copy, op migration.Op, st copyState, watched *bool) error {
	s := &copyStep{cl: r.Cluster, job: job, src: st.src, written: st.src.Annotations[migration.CopyAnnotation], watched: watched,
		next: migration.CopyRecord{User: job.User, Target: job.Target, To: job.To}}
	if st.rec != nil {
		s.next = *st.rec
	}
	switch op {
	case migration.OpCreateTarget:
		return s.createTarget(ctx)
	case migration.OpStartCopy:
		return s.startCopy(ctx)
	case migration.OpRestartCopy:
		return s.restartCopy(ctx)
	case migration.OpWaitCopy:
		return r.Cluster.WaitJob(ctx, job.Namespace, migration.JobName(job.Source))
	case migration.OpVerify:
		return s.verify(ctx)
	case migration.OpSwitch:
		return s.switchUser(ctx)
	}
	return fmt.Errorf("unknown step %q", op)
}

// copyStep is one operation of a copy and the record it moves on.
type copyStep struct {
	cl      Migrations
	job     migration.Copy
	src     claims.Claim
	next    migration.CopyRecord
	written string // the record on the source the step decided from, then the one it wrote
	watched *bool  // this run started the Job
}

// record writes the record only over the one this step decided from: a
// record another apply moved on meanwhile is never rolled back.
func (s *copyStep) record(ctx context.Context) error {
	var err error
	s.written, err = s.cl.WriteCopyRecord(ctx, s.job.Namespace, s.job.Source, s.written, s.next)
	return err
}

// createTarget creates the target empty, carrying this copy's ID, which
// goes on the record first: a target is this copy's only by that ID.
func (s *copyStep) createTarget(ctx context.Context) error {
	if s.next.ID == "" {
		s.next.ID, s.next.Step = newCopyID(), migration.StepPending
		if err := s.record(ctx); err != nil {
			return err
		}
	}
	uid, err := s.cl.CreateCopyTarget(ctx, s.job, s.src, s.next.ID)
	if err != nil {
		return err
	}
	s.next.Step, s.next.TargetUID = migration.StepTargetCreated, uid
	return s.record(ctx)
}

// newCopyID is a copy's ID: random, so that no other copy's target carries it.
func newCopyID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// startCopy starts the Job. It writes into the target with rsync --delete:
// only into the claim this copy created, and not while a pod uses it (the
// gate). A Job of that name left from before (an apply stopped between its
// verification and its deletion) is replaced, never taken for this one.
// It does not start while a server uses the old home: the copy could not
// be switched to, and on another node the Job could not mount it.
//
// The record says copying before the Job exists, over the record this step
// read: another apply that moved the copy on (switched the user to the
// target) stops it there. The gate is passed again once the Job exists: a
// switch in between deletes the Job before its pod can start.
func (s *copyStep) startCopy(ctx context.Context) error {
	job := s.job
	if err := s.sourceIdle(ctx, "the copy waits"); err != nil {
		return err
	}
	into := safety.Step{Kind: safety.StepCopyInto, Why: "copy from " + job.Source, User: job.User,
		Namespace: job.Namespace, Claim: job.Target, UID: s.next.TargetUID, CreatedUID: s.next.TargetUID}
	if err := Guard(ctx, s.cl, into, migration.JobName(job.Source)); err != nil {
		return err
	}
	s.next.Step, s.next.Job = migration.StepCopying, migration.JobName(job.Source)
	if err := s.record(ctx); err != nil {
		return err
	}
	if err := s.cl.StartCopyJob(ctx, job); err != nil {
		return err
	}
	*s.watched = true
	if err := s.stillOurs(ctx, into); err != nil {
		if derr := s.cl.DeleteJob(ctx, job.Namespace, migration.JobName(job.Source)); derr != nil {
			return fmt.Errorf("%w; deleting the copy Job failed too (delete Job %s by hand now): %v", err, migration.JobName(job.Source), derr)
		}
		return err
	}
	return nil
}

// restartCopy drops a check made before this run (a Job that finished
// before it looked, a copy an earlier apply verified): the copy runs again.
func (s *copyStep) restartCopy(ctx context.Context) error {
	if err := s.cl.DeleteJob(ctx, s.job.Namespace, migration.JobName(s.job.Source)); err != nil {
		return err
	}
	s.next.Step = migration.StepTargetCreated
	return s.record(ctx)
}

// verify records the counts the Job reported and deletes the Job.
func (s *copyStep) verify(ctx context.Context) error {
	name := migration.JobName(s.job.Source)
	v, err := s.cl.CopyVerification(ctx, s.job.Namespace, name)
	if err != nil {
		return err
	}
	s.next.Step, s.next.Files, s.next.Bytes = migration.StepVerified, v.Files, v.Bytes
	if err := s.record(ctx); err != nil {
		return err
	}
	return s.cl.DeleteJob(ctx, s.job.Namespace, name)
}

// stillOurs is nil when the copy may go on into the target: the gate lets
// it, and the record on the source is still the one this step wrote (the
// hub follows the record: another apply may have switched the user to
// the target before the annotation says so).
func (s *copyStep) stillOurs(ctx context.Context, into safety.Step) error {
	if err := Guard(ctx, s.cl, into, migration.JobName(s.job.Source)); err != nil {
		return err
	}
	src, err := s.cl.Claim(ctx, s.job.Namespace, s.job.Source)
	if err != nil {
		return err
	}
	if src == nil || src.Annotations[migration.CopyAnnotation] != s.written {
		return fmt.Errorf("the copy record on %s/%s changed while the copy started (another apply at the same time?); the copy was stopped. Apply again", s.job.Namespace, s.job.Source)
	}
	return nil
}

// sourceIdle is nil when no pod but the copy's own Job uses the old home.
func (s *copyStep) sourceIdle(ctx context.Context, what string) error {
	job := s.job
	pods, err := s.cl.MountedBy(ctx, job.Namespace, job.Source, migration.JobName(job.Source))
	if err != nil || len(pods) == 0 {
		return err
	}
	return fmt.Errorf("%s: pod(s) %s use the old home %s; the user keeps it for now. Stop the server and apply again: the copy is brought up to date, then switched", what, strings.Join(pods, ", "), job.Source)
}

// switchUser makes the copy the user's home: the record says so first
// (the hub follows it), then the target's annotation (the gate and the
// plan read it), which a later apply adds when a stop came in between. It
// does not switch while a server uses the old home, or one started during
// the copy: it may have written there, so the copy is brought up to date
// first (rsync sends only what changed).
func (s *copyStep) switchUser(ctx context.Context) error {
	job := s.job
	if s.next.Step != migration.StepSwitched {
		if err := s.sourceIdle(ctx, "not switched"); err != nil {
			s.next.Step = migration.StepTargetCreated
			if rerr := s.record(ctx); rerr != nil {
				return rerr
			}
			return err
		}
		s.next.Step = migration.StepSwitched
		if err := s.record(ctx); err != nil {
			return err
		}
	}
	return s.cl.AnnotateClaim(ctx, job.Namespace, job.Target, migration.CopySwitchedAnnotation, "true")
}
