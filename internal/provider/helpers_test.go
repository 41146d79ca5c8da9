package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// decodeClaims decodes a `claims` JSON value as documented: each user's
// entry in "users" over the fields of "default".
func decodeClaims(claimsJSON string) (map[string]map[string]any, error) {
	var doc struct {
		Default map[string]any            `json:"default"`
		Users   map[string]map[string]any `json:"users"`
	}
	if err := json.Unmarshal([]byte(claimsJSON), &doc); err != nil {
		return nil, fmt.Errorf("claims is not a JSON object: %v: %q", err, claimsJSON)
	}
	if doc.Users == nil {
		return nil, fmt.Errorf("claims has no users object: %q", claimsJSON)
	}
	if doc.Default == nil && len(doc.Users) > 0 {
		return nil, fmt.Errorf("claims has users but no default: %q", claimsJSON)
	}
	out := make(map[string]map[string]any, len(doc.Users))
	for u, d := range doc.Users {
		if _, ok := d["name"]; !ok {
			return nil, fmt.Errorf("claims.users[%q] has no name: %q", u, claimsJSON)
		}
		c := make(map[string]any, len(doc.Default)+len(d))
		for k, v := range doc.Default {
			c[k] = v
		}
		for k, v := range d {
			c[k] = v
		}
		out[u] = c
	}
	return out, nil
}

// claimField reads one field of one user's claim in a `claims` JSON value.
func claimField(claimsJSON, user, field string) (string, error) {
	m, err := decodeClaims(claimsJSON)
	if err != nil {
		return "", err
	}
	c, ok := m[user]
	if !ok {
		return "", fmt.Errorf("claims has no entry for %q: %s", user, claimsJSON)
	}
	v, ok := c[field]
	if !ok {
		return "", fmt.Errorf("claims[%q] has no %q: %s", user, field, claimsJSON)
	}
	return fmt.Sprint(v), nil
}

// checkClaim checks a field of a user's claim in the state of jupyter_home_storage.homes.
func checkClaim(user, field, want string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(hsAddr, "claims", func(v string) error {
		got, err := claimField(v, user, field)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("claims[%q].%s = %q, want %q", user, field, got, want)
		}
		return nil
	})
}

type plannedClaim struct{ user, field, want string }

// expectPlannedClaim checks a field of a user's claim in the planned value.
func expectPlannedClaim(user, field, want string) plancheck.PlanCheck {
	return plannedClaim{user, field, want}
}

func (c plannedClaim) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != hsAddr {
			continue
		}
		after, _ := rc.Change.After.(map[string]any)
		s, ok := after["claims"].(string)
		if !ok {
			resp.Error = fmt.Errorf("planned claims of %s are not known: %v", hsAddr, after["claims"])
			return
		}
		got, err := claimField(s, c.user, c.field)
		if err == nil && got != c.want {
			err = fmt.Errorf("planned claims[%q].%s = %q, want %q", c.user, c.field, got, c.want)
		}
		resp.Error = err
		return
	}
	resp.Error = fmt.Errorf("no planned change for %s", hsAddr)
}

// legacyUsersExact is a plan or state check of legacy_users (acctest.LegacyUsersIs).
func legacyUsersExact(want map[string]string) knownvalue.Check {
	return knownvalue.StringFunc(func(v string) error { return acctest.LegacyUsersIs(v, want) })
}

// checkLegacyUsers checks legacy_users in the state of addr (acctest.LegacyUsersIs).
func checkLegacyUsers(addr string, want map[string]string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(addr, "legacy_users", func(v string) error { return acctest.LegacyUsersIs(v, want) })
}
