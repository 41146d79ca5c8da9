package nodeacc

import (
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// checkLegacyUsers checks legacy_users of jupyter_home_storage.homes: a
// JSON object of exactly want (username to claim names), compact with the
// keys sorted, as jsonencode writes it.
func checkLegacyUsers(want map[string]string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(homesAddr, "legacy_users", func(v string) error { return acctest.LegacyUsersIs(v, want) })
}
