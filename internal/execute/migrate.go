package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Migrations is what the steps of a migration read and change: Cluster
// (the gate's facts and its delete) and one operation per step of a rebind
// and of a copy. internal/kube implements it; tests fake it.
type Migrations interface {
	Cluster

	// Volume returns the volume as it is now; an error when it does not exist.
	Volume(ctx context.Context, name string) (*migration.Volume, error)
	// RetainVolume sets the volume's reclaim policy to Retain and writes
	// rec on it (and the label that finds it by rec.Namespace), in one write.
	// Each change of a volume is made only over the volume as v shows it
	// (its resourceVersion); otherwise it returns claims.ErrChanged.
	RetainVolume(ctx context.Context, v migration.Volume, rec migration.Record) error
	// ReserveVolume writes rec on the volume and gives the volume to the
	// claim rec names, of UID uid, in mode rec.To: no other claim can take
	// it, and the binder binds them.
	ReserveVolume(ctx context.Context, v migration.Volume, rec migration.Record, uid string) error
	// CreateReboundClaim creates the claim rec describes, in mode rec.To,
	// naming volume v. claims.ErrExists when a claim of that name exists.
	CreateReboundClaim(ctx context.Context, rec migration.Record, v migration.Volume) error
	// WaitBound waits until the claim is Bound.
	WaitBound(ctx context.Context, namespace, claim string) error
	// ResizeClaim asks for size in the claim's request.
	ResizeClaim(ctx context.Context, namespace, name, size string) error
	// RestoreVolume sets the volume's reclaim policy back to policy and
	// removes its record and label.
	RestoreVolume(ctx context.Context, v migration.Volume, policy string) error

	// Job returns a Job as it is now; nil when there is none.
	Job(ctx context.Context, namespace, name string) (*migration.Job, error)
	// WriteCopyRecord writes r on claim source if the record there is still
	// expected (its encoded value; "" for none) and returns the value written;
	// a record that changed meanwhile is never overwritten (an error).
	WriteCopyRecord(ctx context.Context, namespace, source, expected string, r migration.CopyRecord) (string, error)
	// CreateCopyTarget creates the copy's target claim, empty, from the
	// source src, carrying copy ID id, and returns its UID. A claim of that
	// name that carries id already (created before a stop) is returned; one
	// that does not is an error.
	CreateCopyTarget(ctx context.Context, job migration.Copy, src claims.Claim, id string) (uid string, err error)
	// StartCopyJob creates the copy Job of job after deleting any Job of
	// its name, so that nothing an earlier Job reported is read as its.
	StartCopyJob(ctx context.Context, job migration.Copy) error
	// DeleteJob deletes a Job; one that does not exist is not an error.
	DeleteJob(ctx context.Context, namespace, name string) error
	// WaitJob waits until a Job succeeded or failed.
	WaitJob(ctx context.Context, namespace, name string) error
	// CopyVerification is what the copy Job's succeeded pod reported.
	CopyVerification(ctx context.Context, namespace, job string) (migration.Verification, error)
	// AnnotateClaim sets one annotation on a claim.
	AnnotateClaim(ctx context.Context, namespace, name, key, value string) error
}

// Runner runs migrations step by step, deciding each step from what the
// cluster shows (migration.NextRebind, migration.NextCopy), so that a
// migration resumes wherever an earlier run stopped.
type Runner struct {
	Cluster Migrations
	// AfterStep, when set, is called after each operation; an error from
	// it stops the migration there (tests stop an apply mid-way with it).
	AfterStep func(user string, op migration.Op) error
}

// maxOps bounds the operations of one migration: every path through the
// steps is shorter.
const maxOps = 20

// run drives one migration: next observes the cluster and returns the
// next operation and how to run it, until the operation is
// migration.OpDone. It returns the step reached (stepOf of the last
// operation decided; done when finished).
func (r Runner) run(user, what string, stepOf func(migration.Op) migration.Step, done migration.Step,
	next func() (migration.Op, func() error, error)) (migration.Step, error) {
	return runSteps(r.AfterStep, user, what, stepOf, done, next)
}

// runSteps is Runner.run for any kind of migration; afterStep is
// Runner.AfterStep.
func runSteps(afterStep func(string, migration.Op) error, user, what string, stepOf func(migration.Op) migration.Step, done migration.Step,
	next func() (migration.Op, func() error, error)) (migration.Step, error) {
	step := migration.StepPending
	for range maxOps {
		op, run, err := next()
		if err != nil {
			return step, err
		}
		if op == migration.OpDone {
			return done, nil
		}
		step = stepOf(op)
		if err := run(); errors.Is(err, claims.ErrChanged) {
			continue // decided again from what the cluster shows now
		} else if err != nil {
			return step, fmt.Errorf("%s: %w", op, err)
		}
		if afterStep != nil {
			if err := afterStep(user, op); err != nil {
				return step, err
			}
		}
	}
	return step, fmt.Errorf("the %s did not converge", what)
}
