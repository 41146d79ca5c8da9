package execute

import (
	"context"
	"slices"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
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

// Select makes only the changes the plan showed; SelectUnplanned, when the
// plan could not show them, makes the non-destructive changes read now and
// refuses a recreate.
func TestSelect(t *testing.T) {
	res := safety.Result{Users: []safety.UserPlan{
		{User: "alice", Namespace: "hub", ClaimName: "claim-alice", Action: safety.ActionCreate},
		{User: "bob", Namespace: "hub", ClaimName: "claim-bob", Action: safety.ActionRecreate, Live: &claims.Claim{UID: "u1"}},
		{User: "carol", Namespace: "hub", ClaimName: "claim-carol", Action: safety.ActionMigrate, Live: &claims.Claim{UID: "u2"}},
	}}
	homes := func(sel Selection) []string {
		var out []string
		for _, up := range sel.Homes {
			out = append(out, up.User+" "+string(up.Action))
		}
		return out
	}
	refused := func(sel Selection) []string {
		var out []string
		for _, m := range sel.Refused {
			out = append(out, m.Key)
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		sel            Selection
		homes, refused []string
		migrate        bool
	}{
		{"as planned", Select(res, safety.ChangesOf(res)), []string{"alice create", "bob recreate"}, nil, true},
		{"nothing planned", Select(res, safety.Changes{}), nil, []string{"alice", "bob", "carol"}, false},
		{"the plan could not show them", SelectUnplanned(res), []string{"alice create"}, []string{"bob"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := homes(tc.sel); !slices.Equal(got, tc.homes) {
				t.Errorf("homes = %q, want %q", got, tc.homes)
			}
			if got := refused(tc.sel); !slices.Equal(got, tc.refused) {
				t.Errorf("refused = %q, want %q", got, tc.refused)
			}
			if tc.sel.Migrate["carol"] != tc.migrate {
				t.Errorf("carol's migration selected = %v, want %v", tc.sel.Migrate["carol"], tc.migrate)
			}
		})
	}
}
