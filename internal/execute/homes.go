package execute

import (
	"context"
	"fmt"

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

// Select compares the changes the plan showed (planned; known false when
// the plan could not show them) with res, the classification of the
// cluster read now. Only changes the plan showed, still due to the same
// objects, are selected; a deletion is never selected unless shown.
func Select(res safety.Result, planned safety.Changes, known bool) Selection {
	now := safety.ChangesOf(res)
	if !known {
		planned = safety.Changes{}
		for k, c := range now {
			if c.Action != safety.ActionRecreate && c.Action != safety.ActionDeleteSource {
				planned[k] = c
			}
		}
	}
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

// Home makes one user's selected change: a resize (resize), a create
// (create), a recreate (the old claim deleted through the gate, then
// create) or the deletion of a copied home's old claim (through the gate,
// after a verification made now: image is the copy image).
// uid is the claim the plan showed.
func Home(ctx context.Context, cl Cluster, up safety.UserPlan, uid, image string, create, resize func(context.Context) error) error {
	step := safety.Step{Why: string(up.Action), User: up.Who(), Namespace: up.Namespace, Claim: up.ClaimName, UID: uid}
	switch up.Action {
	case safety.ActionResize:
		return resize(ctx)
	case safety.ActionDeleteSource:
		step.Verify, step.Target, step.Image = true, up.Target, image
		return Delete(ctx, cl, step)
	case safety.ActionRecreate:
		if err := Delete(ctx, cl, step); err != nil {
			return err
		}
	case safety.ActionCreate:
	default:
		return fmt.Errorf("%q: %s is not a change of a home claim", up.Who(), up.Action)
	}
	return create(ctx)
}
