package provider

import (
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// legacyUsersExact is a plan or state check of legacy_users (acctest.LegacyUsersIs).
func legacyUsersExact(want map[string]string) knownvalue.Check {
	return knownvalue.StringFunc(func(v string) error { return acctest.LegacyUsersIs(v, want) })
}

// checkLegacyUsers checks legacy_users in the state of addr (acctest.LegacyUsersIs).
func checkLegacyUsers(addr string, want map[string]string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(addr, "legacy_users", func(v string) error { return acctest.LegacyUsersIs(v, want) })
}
