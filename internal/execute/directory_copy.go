package execute

import (
	"context"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// DirectoryCopies is what a move by copy out of the shared layout reads and
// changes (migration.NextDirectoryCopy decides its steps). internal/kube
// implements it; tests fake it. A SplitRunner's Cluster must implement it
// to run such moves.
type DirectoryCopies interface {
	// SharedClaimUID is the shared claim's UID; an error when it does not
	// exist or is not bound.
	SharedClaimUID(ctx context.Context, namespace, claim string) (string, error)
	// SplitClaim returns the user's claim as the move sees it (its record,
	// its copied mark, whether it is being deleted); nil when none.
	SplitClaim(ctx context.Context, namespace, name string) (*migration.SplitClaim, error)
	// PrepareDirectory is Splits.PrepareDirectory: a Job makes a missing
	// directory with the owner and mode, refusing symbolic links.
	PrepareDirectory(ctx context.Context, job migration.Split) error
	// DirectoryUsers lists the unfinished pods in namespace that use
	// directory dir of claim shared (a mount of it with a subPath equal to
	// dir, above it or below it, with no subPath, or with a subPathExpr; a
	// container running the shared layout's directory script by the
	// directory in its environment)
	// or that mount claim, but for the pods of the provider's own Jobs of
	// this move (its directory Job and its copy Job).
	DirectoryUsers(ctx context.Context, namespace, shared string, dirs []string, claim string) ([]string, error)
	// CreateDirectoryCopyClaim creates the claim spec describes, of class
	// spec.Class, with KubeSpawner's labels and the record rec (its
	// migration.SplitAnnotation). claims.ErrExists when a claim of that name exists.
	CreateDirectoryCopyClaim(ctx context.Context, rec migration.SplitRecord, spec claims.Spec) error
	// DirectoryCopyJob returns the copy Job of the move to claim
	// (migration.DirectoryCopyJobName) with the UID of the claim it was made
	// for; nil when none. A Job of that name that is not the provider's is
	// an error (it is never deleted).
	DirectoryCopyJob(ctx context.Context, namespace, claim string) (*migration.Job, error)
	// StartDirectoryCopyJob creates the copy Job of job for the claim of UID
	// claimUID, after deleting any Job of its name and waiting until its
	// pods are gone: the shared claim mounted read-only at /src with subPath
	// job.Directory, the claim at /dst, migration.CopyScript.
	StartDirectoryCopyJob(ctx context.Context, job migration.DirectoryCopy, claimUID string) error
	// WaitJob waits until a Job succeeded or failed.
	WaitJob(ctx context.Context, namespace, name string) error
	// DeleteJob deletes a Job; one that does not exist is not an error.
	DeleteJob(ctx context.Context, namespace, name string) error
	// MarkSplitCopied sets migration.SplitCopiedAnnotation = uid on claim
	// rec.Claim, only while the claim's UID is uid, its record is exactly
	// rec and it is not being deleted (an error otherwise, nothing written).
	MarkSplitCopied(ctx context.Context, rec migration.SplitRecord, uid string) error
}

// DirectoryCopy moves one user's home from its directory of the shared
// claim to a new claim of the configured class by a copy, step by step
// (migration.NextDirectoryCopy): while no pod uses the directory, a Job
// makes sure it exists, the claim is made (from then on the hub refuses
// the user's spawns), a Job copies the directory into it, and once this
// run saw the copy verified the claim is marked copied (the hub mounts it
// from the next spawn). The directory is never changed or deleted. It
// returns the step reached.
func (r SplitRunner) DirectoryCopy(ctx context.Context, job migration.DirectoryCopy) (migration.Step, error) {
	cl, ok := r.Cluster.(DirectoryCopies)
	if !ok {
		return migration.StepPending, fmt.Errorf("%s's home cannot move by copy: this cluster client does not make such moves", job.User)
	}
	ns := job.Spec.Namespace
	uid, err := cl.SharedClaimUID(ctx, ns, job.Shared)
	if err != nil {
		return migration.StepPending, err
	}
	rec := migration.SplitRecord{User: job.User, Namespace: ns, Claim: job.Spec.Name, Shared: job.Shared, SharedUID: uid,
		Directory: job.Directory, Method: migration.MethodDirectoryCopy}
	return r.runJobCopy(ctx, jobCopy{user: job.User, what: "move by copy of " + job.Spec.Name, stepOf: migration.DirectoryCopyStepOf,
		recorded: migration.StepClaimCreated, ops: directoryCopyOps,
		job:  copyJob{cl: cl, namespace: ns, name: migration.DirectoryCopyJobName(rec.Claim)},
		kind: &directoryCopySteps{cl: cl, job: job, rec: rec}})
}

// directoryCopyOps are a move by copy's operations (migration.NextDirectoryCopy).
var directoryCopyOps = copyOps{Prepare: migration.OpPrepareDirectory, Recheck: migration.OpRecheckDirectory,
	Record: migration.OpCreateDirectoryCopyClaim, Start: migration.OpStartDirectoryCopy, Wait: migration.OpWaitDirectoryCopy,
	Restart: migration.OpRestartDirectoryCopy, Mark: migration.OpMarkSplitCopied, DeleteJob: migration.OpDeleteDirectoryCopyJob}

// directoryCopySteps is a move by copy's copyKind: the record is the
// claim, made with it; the mark says copied.
type directoryCopySteps struct {
	cl    DirectoryCopies
	job   migration.DirectoryCopy
	rec   migration.SplitRecord
	claim *migration.SplitClaim // as the step read it
}

func (d *directoryCopySteps) readClaim(ctx context.Context) (copyClaim, error) {
	c, err := d.cl.SplitClaim(ctx, d.rec.Namespace, d.rec.Claim)
	d.claim = c
	if err != nil || c == nil {
		return copyClaim{}, err
	}
	return copyClaim{uid: c.UID, ours: c.Record != nil && *c.Record == d.rec, marked: c.Copied != ""}, nil
}

func (d *directoryCopySteps) readJob(ctx context.Context) (*migration.Job, error) {
	return d.cl.DirectoryCopyJob(ctx, d.rec.Namespace, d.rec.Claim)
}

func (d *directoryCopySteps) users(ctx context.Context) ([]string, error) {
	return d.cl.DirectoryUsers(ctx, d.rec.Namespace, d.job.Shared, append([]string{d.job.Directory}, d.job.MovedFrom...), d.rec.Claim)
}

func (d *directoryCopySteps) next(run copyRun, j *migration.Job, busy []string) (migration.Op, error) {
	return migration.NextDirectoryCopy(d.rec, migration.DirectoryCopyState{Claim: d.claim, Job: j, Busy: busy, Prepared: run.prepared, Watched: run.watched})
}

func (d *directoryCopySteps) prepare(ctx context.Context) error {
	return d.cl.PrepareDirectory(ctx, directoryOfCopy(d.job))
}

func (d *directoryCopySteps) recheck(ctx context.Context) error { return d.prepare(ctx) }

// record makes the claim (from then on the hub refuses the user's spawns).
func (d *directoryCopySteps) record(ctx context.Context) error {
	return changedIfExists(d.cl.CreateDirectoryCopyClaim(ctx, d.rec, d.job.Spec))
}

func (d *directoryCopySteps) start(ctx context.Context) error {
	return d.cl.StartDirectoryCopyJob(ctx, d.job, d.claim.UID)
}

// mark marks the claim copied (the hub mounts it from the next spawn).
func (d *directoryCopySteps) mark(ctx context.Context) error {
	return d.cl.MarkSplitCopied(ctx, d.rec, d.claim.UID)
}

// directoryOfCopy is the directory Job's view of the move (PrepareDirectory).
func directoryOfCopy(j migration.DirectoryCopy) migration.Split {
	return migration.Split{User: j.User, Shared: j.Shared, Directory: j.Directory, MovedFrom: j.MovedFrom, Spec: j.Spec, UID: j.UID, GID: j.GID, Mode: j.Mode, Image: j.Image}
}
