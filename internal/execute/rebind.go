package execute

import (
	"context"
	"errors"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// Rebind is one user's rebind.
type Rebind struct {
	User      string
	Namespace string
	Claim     string
	Volume    string
	To        string // access mode
	UID       string // the claim the plan showed; "" when it showed none
	Resize    string // when set, the size the claim grows to once rebound
}

// Rebind serves one claim's volume in mode job.To: the volume retained,
// the claim deleted (through the gate) and created again in the new mode on
// the same volume, then grown to job.Resize when set. It returns the step
// reached.
func (r Runner) Rebind(ctx context.Context, job Rebind) (migration.Step, error) {
	step, err := r.rebind(ctx, job)
	if err != nil || job.Resize == "" {
		return step, err
	}
	if err := r.Cluster.ResizeClaim(ctx, job.Namespace, job.Claim, job.Resize); err != nil {
		return step, fmt.Errorf("rebound, but growing it to %s failed (the next apply grows it): %w", job.Resize, err)
	}
	return step, nil
}

func (r Runner) rebind(ctx context.Context, job Rebind) (migration.Step, error) {
	return r.run(job.User, "rebind of "+job.Claim, migration.StepOf, migration.StepDone, func() (migration.Op, func() error, error) {
		c, err := r.Cluster.Claim(ctx, job.Namespace, job.Claim)
		if err != nil {
			return "", nil, err
		}
		v, err := r.Cluster.Volume(ctx, job.Volume)
		if err != nil {
			return "", nil, err
		}
		op, err := migration.NextRebind(rebindView(c), v, job.To)
		return op, func() error { return r.rebindOp(ctx, job, op, c, *v) }, err
	})
}

// rebindView is the claim as migration.NextRebind sees it; nil when gone.
func rebindView(c *claims.Claim) *migration.Claim {
	if c == nil {
		return nil
	}
	return &migration.Claim{UID: c.UID, Modes: c.AccessModes, Phase: c.Phase, VolumeName: c.VolumeName,
		Deleting: c.Deleting, Resizing: c.Resizing, Annotations: c.Annotations}
}

func (r Runner) rebindOp(ctx context.Context, job Rebind, op migration.Op, c *claims.Claim, v migration.Volume) error {
	switch op {
	case migration.OpRetain:
		return r.Cluster.RetainVolume(ctx, v, migration.RetainRecord(c, v, job.User, job.To))
	case migration.OpDeleteClaim:
		// The volume is retained; the claim goes only if it is the one the
		// plan showed and no pod mounts it now.
		return Delete(ctx, r.Cluster, safety.Step{Why: "rebind", User: job.User, Namespace: job.Namespace, Claim: job.Claim, UID: job.UID})
	case migration.OpReserve:
		rec := *v.Record
		rec.Step = migration.StepReleased
		return r.Cluster.ReserveVolume(ctx, v, rec, c.UID)
	case migration.OpCreateClaim:
		err := r.Cluster.CreateReboundClaim(ctx, *v.Record, v)
		if errors.Is(err, claims.ErrExists) {
			// Created by someone else since this step read that there was no
			// claim: never taken over, never deleted.
			c, gerr := r.Cluster.Claim(ctx, job.Namespace, job.Claim)
			if gerr != nil || c == nil {
				return err
			}
			return migration.CreatedMeanwhile(v.Record, v.Name, c.UID, c.VolumeName)
		}
		return err
	case migration.OpWaitBound:
		return r.Cluster.WaitBound(ctx, job.Namespace, job.Claim)
	case migration.OpRestore:
		return r.Cluster.RestoreVolume(ctx, v, v.Record.ReclaimPolicy)
	}
	return fmt.Errorf("unknown step %q", op)
}
