package acctest

import (
	"encoding/json"
	"fmt"
	"maps"
)

// LegacyUsersIs checks a legacy_users value: a JSON object of exactly want
// (username to claim names), written compact with the keys sorted, as
// jsonencode writes it.
func LegacyUsersIs(v string, want map[string]string) error {
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
