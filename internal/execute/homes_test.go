package execute

import (
	"context"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// writes gives a modelled cluster the writes of a home change (Claims) as
// functions of the call's context: create makes the claim, resize grows it.
type writes struct {
	Cluster
	create, resize func(context.Context) error
}

func (w writes) CreateHome(ctx context.Context, spec claims.Spec) (claims.Claim, error) {
	return claims.Claim{Namespace: spec.Namespace, Name: spec.Name}, w.create(ctx)
}

func (w writes) ResizeClaim(ctx context.Context, _, _, _ string) error { return w.resize(ctx) }
