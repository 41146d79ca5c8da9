package provider

import (
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/safety"
)

// The `claims` value: the most common claim as "default", every user's
// claim as its name and the fields that differ from it.
func TestClaimsValue(t *testing.T) {
	cfg := safety.Config{AccessMode: safety.RWX, StorageClass: "nfs", Capacity: "10240Mi"}
	live := func(name, mode, phase string) *claims.Claim {
		return &claims.Claim{Name: name, AccessModes: []string{mode}, StorageClass: "nfs", Requested: "10Gi", Phase: phase}
	}
	tests := []struct {
		name  string
		ups   []safety.UserPlan
		final bool
		want  string
	}{
		{name: "no claims", want: `{"default":null,"users":{}}`},
		{
			name: "most common claim is the default",
			ups: []safety.UserPlan{
				{User: "ann", ClaimName: "claim-ann", Action: safety.ActionObserve, Live: live("claim-ann", safety.RWO, "Bound")},
				{User: "bob", ClaimName: "claim-bob", Action: safety.ActionObserve, Live: live("claim-bob", safety.RWO, "Bound")},
				{User: "cat", ClaimName: "claim-cat", Managed: true, Action: safety.ActionKeep, Live: live("claim-cat", safety.RWX, "Pending")},
				{User: "dan", ClaimName: "claim-dan", Managed: true, Action: safety.ActionCreate},
				{User: "eve", ClaimName: "claim-eve", Action: safety.ActionRelease}, // no claim: not listed
			},
			want: `{"default":{"access_mode":"ReadWriteOnce","storage_class_name":"nfs","capacity":"10Gi","phase":"Bound","managed":false},"users":{` +
				`"ann":{"name":"claim-ann"},"bob":{"name":"claim-bob"},` +
				`"cat":{"access_mode":"ReadWriteMany","managed":true,"name":"claim-cat","phase":"Pending"},` +
				`"dan":{"access_mode":"ReadWriteMany","managed":true,"name":"claim-dan","phase":""}}}`,
		},
		{
			name:  "after apply only claims that exist; ties go to the first by fields",
			final: true,
			ups: []safety.UserPlan{
				{User: "ann", ClaimName: "claim-ann", Action: safety.ActionObserve, Live: live("claim-ann", safety.RWX, "Bound")},
				{User: "bob", ClaimName: "claim-bob", Action: safety.ActionObserve, Live: live("claim-bob", safety.RWO, "Bound")},
				{User: "dan", ClaimName: "claim-dan", Managed: true, Action: safety.ActionCreate},
			},
			want: `{"default":{"access_mode":"ReadWriteMany","storage_class_name":"nfs","capacity":"10Gi","phase":"Bound","managed":false},"users":{` +
				`"ann":{"name":"claim-ann"},"bob":{"access_mode":"ReadWriteOnce","name":"claim-bob"}}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 5; i++ { // map order must not show
				if got := claimsValue(tc.ups, cfg, tc.final).ValueString(); got != tc.want {
					t.Fatalf("got  %s\nwant %s", got, tc.want)
				}
			}
			if m, err := decodeClaims(claimsValue(tc.ups, cfg, tc.final).ValueString()); err != nil || len(tc.ups) > 1 && m["ann"]["name"] != "claim-ann" {
				t.Fatalf("decodeClaims: %v %v", m, err)
			}
		})
	}
}
