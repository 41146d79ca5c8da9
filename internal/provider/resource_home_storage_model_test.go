package provider

import (
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// legacy_users: each legacy user once, with the names of its legacy claims
// (the home, claims of extra_user_volumes) sorted, once each and
// comma-separated; users with no legacy claim are left out.
func TestLegacyValue(t *testing.T) {
	legacy := func(user, claim string) safety.UserPlan {
		return safety.UserPlan{User: user, ClaimName: claim, Action: safety.ActionLegacy}
	}
	res := safety.Result{
		Users: []safety.UserPlan{
			legacy("alice", "claim-alice"),
			legacy("bob", "claim-bob"),
			{User: "carol", ClaimName: "claim-carol", Action: safety.ActionKeep},
			legacy("dave", "claim-dave"),
		},
		Extra: []safety.UserPlan{
			legacy("alice", "nebi-workspaces-alice"),
			legacy("alice", "conda-alice"),
			legacy("alice", "conda-alice"),
			legacy("carol", "nebi-workspaces-carol"),
			{User: "dave", ClaimName: "nebi-workspaces-dave", Action: safety.ActionKeep},
		},
	}
	want := `{"alice":"claim-alice,conda-alice,nebi-workspaces-alice","bob":"claim-bob","carol":"nebi-workspaces-carol","dave":"claim-dave"}`
	if got := legacyValue(res).ValueString(); got != want {
		t.Errorf("legacy_users\n got %s\nwant %s", got, want)
	}
	if got := legacyValue(safety.Result{}).ValueString(); got != `{}` {
		t.Errorf("legacy_users of no legacy claim: got %s, want {}", got)
	}
}
