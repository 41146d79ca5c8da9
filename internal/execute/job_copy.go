package execute

import (
	"context"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// jobCopy is one run of a copy of a home by a Job between a user's claim
// and their directory of the shared claim: a move by copy out of the
// shared layout (DirectoryCopy) or a merge into it (Merge). Both go the
// same way, step by step: a Job makes or checks the directory, the record
// goes on the claim, a Job copies, and once this run saw the copy verified
// the claim is marked. runJobCopy runs it; kind reads the cluster and makes
// the changes that differ between the two.
type jobCopy struct {
	user, what string // the user, and what the run is ("merge of x") for errors
	stepOf     func(migration.Op) migration.Step
	// recorded is the step reached once this run saw the record on the
	// claim (a stop before a later step reports it).
	recorded migration.Step
	ops      copyOps
	job      copyJob
	kind     copyKind
}

// copyOps names the operations of one kind of jobCopy, as its decision
// (migration.NextDirectoryCopy, migration.NextMerge) returns them.
type copyOps struct {
	Prepare   migration.Op // make the directory (copyKind.prepare)
	Recheck   migration.Op // check the directory again (copyKind.recheck)
	Record    migration.Op // put the record on the claim (copyKind.record)
	Start     migration.Op // start the copy Job (copyKind.start)
	Wait      migration.Op // wait for the copy Job
	Restart   migration.Op // drop a copy this run did not see: delete its Job
	Mark      migration.Op // mark the claim (copyKind.mark), then delete the Job
	DeleteJob migration.Op // delete the copy Job
}

// copyKind is what differs between the kinds of jobCopy: how a step reads
// the cluster and decides, and the changes named after the kind. observe
// keeps what it read for next and for the changes of the same step.
type copyKind interface {
	// observe reads the claim, the copy Job and, while the claim is not
	// marked, the pods that use the claim or the directory.
	observe(ctx context.Context) (copySeen, error)
	// next decides the next operation from what observe read and run.
	next(run copyRun) (migration.Op, error)
	prepare(ctx context.Context) error
	recheck(ctx context.Context) error
	record(ctx context.Context) error
	start(ctx context.Context) error
	mark(ctx context.Context) error
}

// copySeen is what a run notes of one observation.
type copySeen struct {
	ours     bool           // the claim carries this copy's record
	claimUID string         // the claim's UID ("" when there is none)
	job      *migration.Job // the copy Job; nil when none
}

// copyRun is what a run of a jobCopy did and saw, kept between its steps.
type copyRun struct {
	prepared bool // this run made or checked the directory since the last restart
	watched  bool // this run started the copy Job, or saw it unfinished
	recorded bool // this run saw the record on the claim
}

// copyJob is a jobCopy's copy Job, and the client that waits for it and
// deletes it.
type copyJob struct {
	cl interface {
		WaitJob(ctx context.Context, namespace, name string) error
		DeleteJob(ctx context.Context, namespace, name string) error
	}
	namespace, name string
}

func (j copyJob) wait(ctx context.Context) error   { return j.cl.WaitJob(ctx, j.namespace, j.name) }
func (j copyJob) delete(ctx context.Context) error { return j.cl.DeleteJob(ctx, j.namespace, j.name) }

// runJobCopy runs c's steps, each decided from what the cluster shows, and
// returns the step reached.
func (r SplitRunner) runJobCopy(ctx context.Context, c jobCopy) (migration.Step, error) {
	var run copyRun
	step, err := runSteps(r.AfterStep, c.user, c.what, c.stepOf, migration.StepDone, func() (migration.Op, func() error, error) {
		seen, err := c.kind.observe(ctx)
		if err != nil {
			return "", nil, err
		}
		run.note(seen)
		op, err := c.kind.next(run)
		return op, func() error { return run.do(ctx, c, op) }, err
	})
	if err != nil && run.recorded && (step == migration.StepPending || step == migration.StepDirectoryReady) {
		step = c.recorded // stopped after the record was written, before a later step
	}
	return step, err
}

// note adds what one observation shows to what the run saw.
func (run *copyRun) note(s copySeen) {
	run.recorded = run.recorded || s.ours
	if s.ours && s.job != nil && s.job.ClaimUID == s.claimUID && !s.job.Succeeded && !s.job.Failed {
		run.watched = true // seen unfinished: its check is this run's
	}
}

// do runs operation op of c.
func (run *copyRun) do(ctx context.Context, c jobCopy, op migration.Op) error {
	switch op {
	case c.ops.Prepare:
		return run.madeDirectory(c.kind.prepare(ctx))
	case c.ops.Recheck:
		return run.madeDirectory(c.kind.recheck(ctx))
	case c.ops.Record:
		return c.kind.record(ctx)
	case c.ops.Start:
		if err := c.kind.start(ctx); err != nil {
			return err
		}
		run.watched = true
		return nil
	case c.ops.Wait:
		return c.job.wait(ctx)
	case c.ops.Restart:
		// The directory is made or checked again before the next copy.
		run.prepared, run.watched = false, false
		return c.job.delete(ctx)
	case c.ops.Mark:
		if err := c.kind.mark(ctx); err != nil {
			return err
		}
		return c.job.delete(ctx)
	case c.ops.DeleteJob:
		return c.job.delete(ctx)
	}
	return fmt.Errorf("unknown step %q", op)
}

// madeDirectory notes that the directory was made or checked, when err is
// nil.
func (run *copyRun) madeDirectory(err error) error {
	if err != nil {
		return err
	}
	run.prepared = true
	return nil
}
