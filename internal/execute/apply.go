package execute

import (
	"context"
	"errors"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/parallel"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// Changes is every change an apply makes to the cluster: the claims.StorageClass,
// the home claims' creates, resizes and gated deletes, and the steps of the
// migrations. internal/kube implements it (and Merges, which a
// SplitRunner asks its Cluster for).
type Changes interface {
	Migrations
	Splits
	DirectoryCopies
	Claims
	Classes
}

// Apply runs an apply's changes, in the order the provider calls them
// (Class, then SharedClaim, then Homes, then Migrate), and gathers what came of them in
// Outcome, which the provider reports as one.
type Apply struct {
	Cluster Changes
	// Parallel is how many claims are written at once (at least 1).
	Parallel int
	// Unreachable says whether an error means the API server could not be
	// reached (parallel.ForEach): the changes not started yet are then not
	// attempted. nil: never.
	Unreachable func(error) bool
	// AfterStep is Runner.AfterStep.
	AfterStep func(user string, op migration.Op) error

	Outcome Outcome
}

// Outcome is what an apply's changes came to.
type Outcome struct {
	Class  *ClassOutcome  // nil when the apply manages no class
	Shared *SharedOutcome // nil when the apply creates no shared claim
	Homes  []HomeOutcome  // Selection.Homes, in order
	// Unreachable: a home change found that the API server could not be
	// reached (the migrations are then not run).
	Unreachable bool
	Migrations  []MigrationOutcome
}

// HomeOutcome is what one home change came to.
type HomeOutcome struct {
	Plan    safety.UserPlan
	Created *claims.Claim // the claim it created (a create, a recreate)
	// Err is why it failed; it wraps parallel.ErrNotAttempted when it was not
	// attempted.
	Err error
}

// MigrationOutcome is what one migration came to.
type MigrationOutcome struct {
	Migration
	Step migration.Step // the step reached (migration.StepPending when not attempted)
	Err  error          // wraps parallel.ErrNotAttempted when it was not attempted
}

// Migration is one migration to run: a copy, a split, a move by copy out
// of the shared layout or a rebind.
type Migration struct {
	Key           string // as in safety.Changes
	Plan          safety.UserPlan
	Copy          *migration.Copy          // set for a copy
	Split         *migration.Split         // set for a split
	DirectoryCopy *migration.DirectoryCopy // set for a move by copy out of the shared layout
	Merge         *migration.Merge         // set for a merge into the shared layout
	Rebind        *Rebind                  // set otherwise
}

// Failed reports whether some change failed or was not attempted.
func (o Outcome) Failed() bool {
	if o.Class != nil && o.Class.Err != nil || o.Shared != nil && o.Shared.Err != nil {
		return true
	}
	for _, h := range o.Homes {
		if h.Err != nil {
			return true
		}
	}
	for _, m := range o.Migrations {
		if m.Err != nil {
			return true
		}
	}
	return false
}

// Class makes the claims.StorageClass (Class) and reports whether it succeeded;
// when it did not, no claim may be changed.
func (a *Apply) Class(ctx context.Context, want claims.StorageClass, prior *claims.StorageClass) bool {
	out := Class(ctx, a.Cluster, want, prior)
	a.Outcome.Class = &out
	return out.Err == nil
}

// Homes makes the selected home changes, Parallel at a time, each
// destructive step through the gate (Home). spec is the claim a create
// makes, but for its namespace, name, user and server (claims.Spec.For).
func (a *Apply) Homes(ctx context.Context, sel Selection, spec claims.Spec, image string) {
	outs := make([]HomeOutcome, len(sel.Homes))
	failed := parallel.ForEach(ctx, indexes(len(sel.Homes)), a.Parallel, a.Unreachable, func(ctx context.Context, i int) error {
		up := sel.Homes[i]
		c, err := Home(ctx, a.Cluster, up, sel.Planned[up.Who()].UID, image, SpecFor(spec, up))
		outs[i].Created = c // each goroutine its own element
		return err
	})
	for i, up := range sel.Homes {
		outs[i].Plan, outs[i].Err = up, failed[i]
		if err := failed[i]; err != nil && !errors.Is(err, parallel.ErrNotAttempted) && a.Unreachable != nil && a.Unreachable(err) {
			a.Outcome.Unreachable = true
		}
	}
	a.Outcome.Homes = outs
}

// Migrate runs the migrations, n at a time (Runner).
func (a *Apply) Migrate(ctx context.Context, ms []Migration, n int) {
	run := Runner{Cluster: a.Cluster, AfterStep: a.AfterStep}
	split := SplitRunner{Cluster: a.Cluster, AfterStep: a.AfterStep}
	outs := make([]MigrationOutcome, len(ms))
	failed := parallel.ForEach(ctx, indexes(len(ms)), n, a.Unreachable, func(ctx context.Context, i int) error {
		var step migration.Step
		var err error
		switch m := ms[i]; {
		case m.Copy != nil:
			step, err = run.Copy(ctx, *m.Copy)
		case m.Split != nil:
			step, err = split.Split(ctx, *m.Split)
		case m.DirectoryCopy != nil:
			step, err = split.DirectoryCopy(ctx, *m.DirectoryCopy)
		case m.Merge != nil:
			step, err = split.Merge(ctx, *m.Merge)
		default:
			step, err = run.Rebind(ctx, *m.Rebind)
		}
		outs[i].Step = step // each goroutine its own element
		return err
	})
	for i, m := range ms {
		outs[i].Migration, outs[i].Err = m, failed[i]
		if errors.Is(failed[i], parallel.ErrNotAttempted) {
			outs[i].Step = migration.StepPending
		}
	}
	a.Outcome.Migrations = outs
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
