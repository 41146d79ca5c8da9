package nodeacc

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// checkLegacyUsers checks legacy_users of jupyter_home_storage.homes: a
// JSON object of exactly want (username to claim names), compact with the
// keys sorted, as jsonencode writes it.
func checkLegacyUsers(want map[string]string) resource.TestCheckFunc {
	return resource.TestCheckResourceAttrWith(homesAddr, "legacy_users", func(v string) error {
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
	})
}
