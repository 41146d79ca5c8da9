package execute

import (
	"context"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// Merges is what a merge (consolidation: a user's claim copied into their
// directory of the shared claim) reads and changes; migration.NextMerge
// decides its steps. internal/kube implements it; tests fake it. A
// SplitRunner's Cluster must implement it to run merges.
type Merges interface {
	// SharedClaimUID is DirectoryCopies.SharedClaimUID.
	SharedClaimUID(ctx context.Context, namespace, claim string) (string, error)
	// MergeClaim returns the user's claim as the merge sees it; nil when
	// none.
	MergeClaim(ctx context.Context, namespace, name string) (*migration.MergeClaim, error)
	// MergeUsers lists the unfinished pods in namespace that use one of
	// dirs of claim shared, or that mount claim (as
	// DirectoryCopies.DirectoryUsers), but for the pods of this merge's own
	// Jobs.
	MergeUsers(ctx context.Context, namespace, shared string, dirs []string, claim string) ([]string, error)
	// PrepareMergeDirectory makes the merge's directory (a Job running
	// kubespawner.MergeDirectoryCommand): made when missing with the
	// owner and mode, refused when it or an earlier place of the home
	// holds anything, or a symbolic link is on its way.
	PrepareMergeDirectory(ctx context.Context, job migration.Merge) error
	// PrepareDirectory is Splits.PrepareDirectory: made when missing,
	// left as it is otherwise (after the record, it holds the copy).
	PrepareDirectory(ctx context.Context, job migration.Split) error
	// RecordMerge writes rec on claim rec.Claim, only while its UID is
	// rec.ClaimUID, it carries no merge record or mark and it is not being
	// deleted (an error otherwise, nothing written).
	RecordMerge(ctx context.Context, rec migration.MergeRecord) error
	// MergeJob returns the copy Job of the merge of claim
	// (migration.MergeJobName) with the UID of the claim it copies; nil
	// when none. A Job of that name that is not the provider's is an
	// error (it is never deleted).
	MergeJob(ctx context.Context, namespace, claim string) (*migration.Job, error)
	// StartMergeJob creates the copy Job of job, after deleting any Job
	// of its name and waiting until its pods are gone: the claim mounted
	// read-only at /src, the shared claim at /dst with subPath
	// job.Directory, migration.CopyScript.
	StartMergeJob(ctx context.Context, job migration.Merge, claimUID string) error
	// WaitJob waits until a Job succeeded or failed.
	WaitJob(ctx context.Context, namespace, name string) error
	// DeleteJob deletes a Job; one that does not exist is not an error.
	DeleteJob(ctx context.Context, namespace, name string) error
	// MarkMerged sets migration.MergedAnnotation = rec.ClaimUID on claim
	// rec.Claim, only while its UID is rec.ClaimUID, its record is exactly
	// rec and it is not being deleted (an error otherwise, nothing written).
	MarkMerged(ctx context.Context, rec migration.MergeRecord) error
}

// Merge copies one user's home from their claim into their directory of
// the shared claim, step by step (migration.NextMerge): while no pod uses
// the claim or the directory, a Job makes the directory and finds it
// empty, the record goes on the claim (from then on the hub refuses the
// user's spawns), a Job copies the claim (read-only) into the directory,
// and once this run saw the copy verified the claim is marked merged (the
// hub mounts the directory from the next spawn). The claim is never
// changed but for its annotations, nor deleted. It returns the step
// reached.
func (r SplitRunner) Merge(ctx context.Context, job migration.Merge) (migration.Step, error) {
	cl, ok := r.Cluster.(Merges)
	if !ok {
		return migration.StepPending, fmt.Errorf("%s's home cannot be merged: this cluster client does not make merges", job.User)
	}
	ns := job.Namespace
	uid, err := cl.SharedClaimUID(ctx, ns, job.Shared)
	if err != nil {
		return migration.StepPending, err
	}
	rec := migration.MergeRecord{User: job.User, Namespace: ns, Claim: job.Claim, ClaimUID: job.ClaimUID, Shared: job.Shared, SharedUID: uid, Directory: job.Directory}
	if c, err := cl.MergeClaim(ctx, ns, job.Claim); err == nil && c != nil && c.Record != nil && c.Record.ClaimUID == job.ClaimUID {
		// A merge an earlier apply began: its record is this merge's (the
		// shared claim's UID it began with is checked by NextMerge).
		rec.SharedUID = c.Record.SharedUID
	}
	return r.runJobCopy(ctx, jobCopy{user: job.User, what: "merge of " + job.Claim, stepOf: migration.MergeStepOf,
		recorded: migration.StepRecorded, ops: mergeOps,
		job:  copyJob{cl: cl, namespace: ns, name: migration.MergeJobName(rec.Claim)},
		kind: &mergeSteps{cl: cl, job: job, rec: rec, sharedUID: uid}})
}

// mergeOps are a merge's operations (migration.NextMerge).
var mergeOps = copyOps{Prepare: migration.OpPrepareMergeDirectory, Recheck: migration.OpRecheckMergeDirectory,
	Record: migration.OpRecordMerge, Start: migration.OpStartMerge, Wait: migration.OpWaitMerge,
	Restart: migration.OpRestartMerge, Mark: migration.OpMarkMerged, DeleteJob: migration.OpDeleteMergeJob}

// mergeSteps is a merge's copyKind: the record goes on the user's claim;
// the mark says merged.
type mergeSteps struct {
	cl        Merges
	job       migration.Merge
	rec       migration.MergeRecord
	sharedUID string                // the shared claim's UID now
	claim     *migration.MergeClaim // as the step read it
}

func (m *mergeSteps) readClaim(ctx context.Context) (copyClaim, error) {
	c, err := m.cl.MergeClaim(ctx, m.rec.Namespace, m.rec.Claim)
	m.claim = c
	if err != nil || c == nil {
		return copyClaim{}, err
	}
	return copyClaim{uid: c.UID, ours: c.Record != nil && *c.Record == m.rec, marked: c.Merged != ""}, nil
}

func (m *mergeSteps) readJob(ctx context.Context) (*migration.Job, error) {
	return m.cl.MergeJob(ctx, m.rec.Namespace, m.rec.Claim)
}

func (m *mergeSteps) users(ctx context.Context) ([]string, error) {
	return m.cl.MergeUsers(ctx, m.rec.Namespace, m.job.Shared, append([]string{m.job.Directory}, m.job.Earlier...), m.rec.Claim)
}

func (m *mergeSteps) next(run copyRun, j *migration.Job, busy []string) (migration.Op, error) {
	return migration.NextMerge(m.rec, migration.MergeState{Claim: m.claim, Job: j, SharedUID: m.sharedUID, Busy: busy, Prepared: run.prepared, Watched: run.watched})
}

// prepare makes the directory and finds it empty.
func (m *mergeSteps) prepare(ctx context.Context) error {
	return m.cl.PrepareMergeDirectory(ctx, m.job)
}

// recheck makes the directory when missing (after the record, it holds
// the copy).
func (m *mergeSteps) recheck(ctx context.Context) error {
	return m.cl.PrepareDirectory(ctx, directoryOfMerge(m.job))
}

// record puts the record on the claim (from then on the hub refuses the
// user's spawns).
func (m *mergeSteps) record(ctx context.Context) error { return m.cl.RecordMerge(ctx, m.rec) }

func (m *mergeSteps) start(ctx context.Context) error {
	return m.cl.StartMergeJob(ctx, m.job, m.claim.UID)
}

// mark marks the claim merged (the hub mounts the directory from the next
// spawn).
func (m *mergeSteps) mark(ctx context.Context) error { return m.cl.MarkMerged(ctx, m.rec) }

// directoryOfMerge is the directory Job's view of the merge (PrepareDirectory).
func directoryOfMerge(j migration.Merge) migration.Split {
	return migration.Split{User: j.User, Shared: j.Shared, Directory: j.Directory, Spec: claims.Spec{Namespace: j.Namespace, Name: j.Claim},
		UID: j.UID, GID: j.GID, Mode: j.Mode, Image: j.Image}
}
