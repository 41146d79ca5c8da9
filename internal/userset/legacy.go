package userset

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LegacyFix is what the errors about legacy_users tell a user to write.
const LegacyFix = `legacy_users = jupyter_home_storage.<name>.legacy_users, or by hand legacy_users = jsonencode({ alice = "claim-alice" })`

// legacyForm: each legacy user maps to a string, the names of the claims
// kept (comma-separated), which only jupyter_home_storage reads.
var legacyForm = form{value: legacyValue, read: claimNames}

const legacyValue = `a string (its claim names, e.g. "claim-alice")`

// EncodeLegacy is a legacy_users value: compact JSON of an object from
// each legacy user to its claim names, keys sorted, as jsonencode writes it
// ({} when claims is empty).
func EncodeLegacy(claims map[string]string) string {
	if claims == nil {
		claims = map[string]string{}
	}
	b, err := json.Marshal(claims)
	if err != nil { // a map of strings to strings always encodes
		panic(err)
	}
	return string(b)
}

// ParseLegacy returns the usernames of a legacy_users value (the keys of
// a JSON object from each username to a string), sorted, each in Unicode
// NFC and listed once; the values are not returned. The error names what
// is wrong; the caller adds where and LegacyFix.
func ParseLegacy(s string) ([]string, error) {
	if names, ok := parseCanonicalObject(s, plainString); ok {
		return names, nil
	}
	return parseObject(s, legacyForm)
}

// plainString takes a JSON string without escapes or control characters
// (as jsonencode writes claim names) off the front of rest.
func plainString(rest string) (string, bool) {
	if len(rest) == 0 || rest[0] != '"' {
		return "", false
	}
	end := strings.IndexByte(rest[1:], '"')
	if end < 0 {
		return "", false
	}
	for _, c := range []byte(rest[1 : 1+end]) {
		if c < 0x20 || c == '\\' {
			return "", false
		}
	}
	return rest[2+end:], true
}

// claimNames reads the value of a key, which must be a string.
func claimNames(dec *json.Decoder, name string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("is not valid JSON (%v)", jsonError(err))
	}
	switch tok {
	case json.Delim('{'):
		return fmt.Errorf("maps %q to an object; each username maps to %s", name, legacyValue)
	case json.Delim('['):
		return fmt.Errorf("maps %q to an array; each username maps to %s", name, legacyValue)
	}
	if _, ok := tok.(string); !ok {
		return fmt.Errorf("maps %q to %s; each username maps to %s", name, describe(tok), legacyValue)
	}
	return nil
}
