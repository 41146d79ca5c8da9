package provider

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
)

// legacyUsersIs checks a legacy_users value: a JSON object of exactly want
// (username to claim names), written compact with the keys sorted, as
// jsonencode writes it.
func legacyUsersIs(v string, want map[string]string) error {
	var got map[string]string
	if err := json.Unmarshal([]byte(v), &got); err != nil || got == nil {
		return fmt.Errorf("legacy_users %q is not a JSON object of strings (%v)", v, err)
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("legacy_users = %v, want %v", got, want)
	}
	if b, _ := json.Marshal(got); string(b) != v {
		return fmt.Errorf("legacy_users %q is not compact JSON with the keys sorted (%s)", v, b)
	}
	return nil
}

// legacyUsersExact is a plan or state check of legacy_users (legacyUsersIs).
func legacyUsersExact(want map[string]string) knownvalue.Check {
	return knownvalue.StringFunc(func(v string) error { return legacyUsersIs(v, want) })
}

// checkLegacyUsers checks legacy_users in the state of addr (legacyUsersIs).
func checkLegacyUsers(addr string, want map[string]string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(addr, "legacy_users", func(v string) error { return legacyUsersIs(v, want) })
}
