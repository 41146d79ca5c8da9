package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Splits is what a split's steps read and change (migration.NextSplit
// decides them). internal/kube implements it; tests fake it.
type Splits interface {
	// SharedSource returns the source of the volume the shared claim is
	// bound to, and the claim's UID; an error when it is not bound.
	SharedSource(ctx context.Context, namespace, claim string) (src migration.VolumeSource, uid string, err error)
	// PrepareDirectory makes sure job's directory exists on the shared
	// claim, creating a missing one with job's owner and mode as the
	// layout's init container does (a Job mounting the shared claim), and
	// waits until it did. It never removes or changes anything else.
	PrepareDirectory(ctx context.Context, job migration.Split) error
	// SplitVolume returns the split's volume as it is now; nil when none.
	SplitVolume(ctx context.Context, name string) (*migration.SplitVolume, error)
	// CreateSplitVolume creates volume rec.Volume on src: reclaim policy
	// Retain, mode spec.Mode, capacity spec.Size, no storage class, a
	// claimRef to rec's claim by namespace, name and claimUID (the binder
	// gives it to no other claim), and the record. A volume of that name
	// that exists is claims.ErrExists.
	CreateSplitVolume(ctx context.Context, rec migration.SplitRecord, src migration.VolumeSource, spec claims.Spec, claimUID string) error
	// SplitClaim returns the user's claim as the split sees it; nil when none.
	SplitClaim(ctx context.Context, namespace, name string) (*migration.SplitClaim, error)
	// CreateSplitClaim creates the claim spec describes, naming volume
	// rec.Volume (made after it, for it alone), with no storage class and
	// the record. claims.ErrExists when a claim of that name exists.
	CreateSplitClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error
	// WaitBound waits until the claim is Bound.
	WaitBound(ctx context.Context, namespace, claim string) error
}

// SplitRunner runs splits step by step, deciding each step from what the
// cluster shows, so that a split resumes wherever an earlier run stopped.
type SplitRunner struct {
	Cluster Splits
	// AfterStep is as Runner.AfterStep.
	AfterStep func(user string, op migration.Op) error
}

// Split moves one user's home from its directory of the shared claim to a
// claim of its own on a volume on that directory, made after the claim and
// reserved for it by UID. Nothing is copied or deleted. It returns the
// step reached.
func (r SplitRunner) Split(ctx context.Context, job migration.Split) (migration.Step, error) {
	ns := job.Spec.Namespace
	src, uid, err := r.Cluster.SharedSource(ctx, ns, job.Shared)
	if err != nil {
		return migration.StepPending, err
	}
	if _, err := migration.SplitSource(src, job.Directory); err != nil {
		return migration.StepPending, fmt.Errorf("%s's home cannot move without a copy: %w", job.User, err)
	}
	rec := migration.SplitRecord{User: job.User, Namespace: ns, Claim: job.Spec.Name, Shared: job.Shared, SharedUID: uid,
		Directory: job.Directory, Volume: migration.SplitVolumeName(ns, job.Spec.Name)}
	prepared := false
	return runSteps(r.AfterStep, job.User, "move of "+job.Spec.Name, migration.SplitStepOf, migration.StepDone, func() (migration.Op, func() error, error) {
		v, err := r.Cluster.SplitVolume(ctx, rec.Volume)
		if err != nil {
			return "", nil, err
		}
		c, err := r.Cluster.SplitClaim(ctx, ns, rec.Claim)
		if err != nil {
			return "", nil, err
		}
		op, err := migration.NextSplit(rec, migration.SplitState{Volume: v, Claim: c, Prepared: prepared})
		return op, func() error { return r.splitOp(ctx, job, rec, src, op, c, &prepared) }, err
	})
}

func (r SplitRunner) splitOp(ctx context.Context, job migration.Split, rec migration.SplitRecord, shared migration.VolumeSource, op migration.Op,
	claim *migration.SplitClaim, prepared *bool) error {
	switch op {
	case migration.OpPrepareDirectory:
		if err := r.Cluster.PrepareDirectory(ctx, job); err != nil {
			return err
		}
		*prepared = true
		return nil
	case migration.OpCreateVolume:
		src, err := migration.SplitSource(shared, job.Directory)
		if err != nil {
			return err
		}
		return changedIfExists(r.Cluster.CreateSplitVolume(ctx, rec, src, job.Spec, claim.UID))
	case migration.OpCreateSplitClaim:
		return changedIfExists(r.Cluster.CreateSplitClaim(ctx, rec, job.Spec))
	case migration.OpWaitSplitBound:
		return r.Cluster.WaitBound(ctx, rec.Namespace, rec.Claim)
	}
	return fmt.Errorf("unknown step %q", op)
}

// changedIfExists: an object created meanwhile (another apply, someone
// else) is decided again from what the cluster shows, never taken over.
func changedIfExists(err error) error {
	if errors.Is(err, claims.ErrExists) {
		return claims.ErrChanged
	}
	return err
}
