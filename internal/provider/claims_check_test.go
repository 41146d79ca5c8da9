package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
)

// claimField reads one field of one user's entry in a `claims` JSON value.
func claimField(claimsJSON, user, field string) (string, error) {
	var m map[string]map[string]any
	if err := json.Unmarshal([]byte(claimsJSON), &m); err != nil {
		return "", fmt.Errorf("claims is not a JSON object: %v: %q", err, claimsJSON)
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
