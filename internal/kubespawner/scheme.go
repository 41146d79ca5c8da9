package kubespawner

import (
	"fmt"
	"strings"
)

// Scheme is KubeSpawner's slug_scheme: how {username}, {servername} and
// {user_server} are derived from the raw names.
type Scheme string

const (
	// SchemeSafe is the default since KubeSpawner 7: names that are valid
	// object names pass unchanged, anything else is hashed (SafeSlug).
	SchemeSafe Scheme = "safe"
	// SchemeEscape is the legacy scheme of KubeSpawner <= 6 (EscapeSlug).
	SchemeEscape Scheme = "escape"
)

// DefaultScheme is the slug scheme KubeSpawner uses when none is configured.
const DefaultScheme = SchemeSafe

// Schemes returns the valid slug schemes.
func Schemes() []Scheme { return []Scheme{SchemeSafe, SchemeEscape} }

// ParseScheme converts a configured slug_scheme value to a Scheme. It
// returns an error naming the valid values for anything else, including the
// empty string.
func ParseScheme(s string) (Scheme, error) {
	switch Scheme(s) {
	case SchemeSafe, SchemeEscape:
		return Scheme(s), nil
	}
	quoted := make([]string, 0, 2)
	for _, v := range Schemes() {
		quoted = append(quoted, fmt.Sprintf("%q", string(v)))
	}
	return "", fmt.Errorf("invalid slug scheme %q: valid values are %s", s, strings.Join(quoted, ", "))
}

// String returns the scheme name.
func (s Scheme) String() string { return string(s) }
