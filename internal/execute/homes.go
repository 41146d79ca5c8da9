package execute

import (
	"context"
	"fmt"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// Selection is what an apply does: the planned changes that still hold,
// and those it does not make.
type Selection struct {
	// Planned is what the plan showed, the claims' UIDs among it; when the
	// plan could not show it, the non-destructive changes read now.
	Planned safety.Changes
	Homes   []safety.UserPlan // creates, resizes, recreates, source deletions
	Migrate map[string]bool   // keys (as in safety.Changes) of the migrations to run
	Refused []safety.Mismatch // the cluster gives another change than the plan showed: not made
	Moot    []safety.Mismatch // planned, but nothing is left to do
}

// Select compares the changes the plan showed (planned) with res, the
// classification of the cluster read now. Only changes the plan showed,
// still due to the same objects, are selected; a deletion is never
// selected unless shown.
func Select(res safety.Result, planned safety.Changes) Selection {
	return selectPlanned(res, planned, safety.ChangesOf(res))
}

// SelectUnplanned is Select when the plan could not show the changes: the
// non-destructive changes read now stand for the planned ones (a recreate
// or the deletion of a copied home's old claim is never selected).
func SelectUnplanned(res safety.Result) Selection {
	now := safety.ChangesOf(res)
	planned := safety.Changes{}
	for k, c := range now {
		if c.Action != safety.ActionRecreate && c.Action != safety.ActionDeleteSource {
			planned[k] = c
		}
	}
	return selectPlanned(res, planned, now)
}

// selectPlanned selects the changes of res that planned shows and now
// (the changes of res) still holds.
func selectPlanned(res safety.Result, planned, now safety.Changes) Selection {
	run, refused, moot := safety.Reconcile(planned, now)
	sel := Selection{Planned: planned, Migrate: map[string]bool{}, Refused: refused, Moot: moot}
	runs := map[string]bool{}
	for _, k := range run {
		runs[k] = true
	}
	for k, up := range res.Keyed() {
		switch {
		case !runs[k]:
		case up.Action == safety.ActionMigrate:
			sel.Migrate[k] = true
		default:
			sel.Homes = append(sel.Homes, *up)
		}
	}
	return sel
}

// Claims is what a home change writes besides the gate's delete.
// internal/kube implements it.
type Claims interface {
	// CreateHome creates the claim spec describes and returns it as
	// created. A claim of that name that exists already for the same user
	// and server (KubeSpawner made it since the plan) is returned as it is,
	// unchanged; one of another user or server is an error, never taken
	// for this one (a shared claim is no user's).
	CreateHome(ctx context.Context, spec claims.Spec) (claims.Claim, error)
	// ResizeClaim asks for size in the claim's request.
	ResizeClaim(ctx context.Context, namespace, name, size string) error
}

// Homes is what a home change reads (the gate's facts) and writes.
type Homes interface {
	Cluster
	Claims
}

// Home makes one user's selected change: a resize (to spec.Size), a create
// (of spec), a recreate (the old claim deleted through the gate, then spec
// created) or the deletion of a copied home's old claim (through the gate,
// after a verification made now: image is the copy image).
// uid is the claim the plan showed. It returns the claim it created, if any.
func Home(ctx context.Context, cl Homes, up safety.UserPlan, uid, image string, spec claims.Spec) (*claims.Claim, error) {
	step := safety.Step{Why: string(up.Action), User: up.Who(), Namespace: up.Namespace, Claim: up.ClaimName, UID: uid}
	switch up.Action {
	case safety.ActionResize:
		return nil, cl.ResizeClaim(ctx, up.Namespace, up.Live.Name, spec.Size)
	case safety.ActionDeleteSource:
		step.Verify, step.Target, step.Image = true, up.Target, image
		return nil, Delete(ctx, cl, step)
	case safety.ActionRecreate:
		if err := Delete(ctx, cl, step); err != nil {
			return nil, err
		}
	case safety.ActionCreate:
	default:
		return nil, fmt.Errorf("%q: %s is not a change of a home claim", up.Who(), up.Action)
	}
	c, err := cl.CreateHome(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// SharedOutcome is what the creation of the shared layout's claim came to.
type SharedOutcome struct {
	Namespace, Name string
	Claim           *claims.Claim // the claim created, or found made since the plan
	Err             error
}

// SharedClaim creates the shared layout's claim (spec.Shared), which the
// plan, read right before with fresh facts, found missing and allowed to
// create (safety.Result.CreateShared). A claim of that name made since
// (by someone else) is kept as it is, never changed, and must be usable as
// the plan would require it (safety.SharedClaimProblem); the one created
// is too. It reports whether the claim is there and usable: when it is
// not, no home may be changed.
func (a *Apply) SharedClaim(ctx context.Context, spec claims.Spec) bool {
	out := SharedOutcome{Namespace: spec.Namespace, Name: spec.Name}
	c, err := a.Cluster.CreateHome(ctx, spec)
	if err == nil {
		out.Claim = &c
		if f := safety.SharedClaimProblem(spec.Namespace, spec.Mode, &c); f != nil {
			err = fmt.Errorf("%s: %s", f.Summary, f.Detail)
		}
	}
	out.Err = err
	a.Outcome.Shared = &out
	return err == nil
}

// SpecFor is spec for the claim of up: its namespace, name, user and server.
func SpecFor(spec claims.Spec, up safety.UserPlan) claims.Spec {
	spec.Namespace, spec.Name, spec.User, spec.Server = up.Namespace, up.ClaimName, up.User, up.Server
	return spec
}
