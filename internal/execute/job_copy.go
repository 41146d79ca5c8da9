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

// copyKind is what differs between the kinds of jobCopy: the claim and the
// Job as the kind reads them, its decision, and the changes named after
// it. readClaim keeps the claim it read for next and for the changes of
// the same step.
type copyKind interface {
	// readClaim reads the user's claim.
	readClaim(ctx context.Context) (copyClaim, error)
	// readJob reads the copy Job; nil when none.
	readJob(ctx context.Context) (*migration.Job, error)
	// users lists the pods that use the claim or the directory (or an
	// earlier place of the home), but for the copy's own Jobs.
	users(ctx context.Context) ([]string, error)
	// next decides the next operation from the claim readClaim read, the
	// Job, the pods in the way and what the run did.
	next(run copyRun, job *migration.Job, busy []string) (migration.Op, error)
	prepare(ctx context.Context) error
	recheck(ctx context.Context) error
	record(ctx context.Context) error
	start(ctx context.Context) error
	mark(ctx context.Context) error
}

// copyClaim is what a run reads of the user's claim; the zero value when
// there is none.
type copyClaim struct {
	uid    string
	ours   bool // it carries this copy's record
	marked bool // marked copied or merged: the copy is the home, its pods are the user's
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
		claim, err := c.kind.readClaim(ctx)
		if err != nil {
			return "", nil, err
		}
		j, err := c.kind.readJob(ctx)
		if err != nil {
			return "", nil, err
		}
		var busy []string
		if !claim.marked {
			if busy, err = c.kind.users(ctx); err != nil {
				return "", nil, err
			}
		}
		run.note(claim, j)
		op, err := c.kind.next(run, j, busy)
		return op, func() error { return run.do(ctx, c, op) }, err
	})
	if err != nil && run.recorded && (step == migration.StepPending || step == migration.StepDirectoryReady) {
		step = c.recorded // stopped after the record was written, before a later step
	}
	return step, err
}

// note adds what one step read to what the run saw: the claim and the
// copy Job.
func (run *copyRun) note(c copyClaim, j *migration.Job) {
	run.recorded = run.recorded || c.ours
	if c.ours && j != nil && j.ClaimUID == c.uid && !j.Succeeded && !j.Failed {
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
