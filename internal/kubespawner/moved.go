package kubespawner

import (
	"encoding/json"
	"fmt"
	"strings"
)

// schemeFields are the template fields whose value depends on slug_scheme.
var schemeFields = map[string]bool{FieldUsername: true, FieldServername: true, FieldUserServer: true}

// SchemeFree rewrites template t, as expanded under scheme, with the
// fields that name the scheme ({escaped_username} for {username} under
// the escape scheme, {safe_username} under the safe one, and so on for
// the server's names), so that it gives the same directories whatever
// scheme expands it: KubeSpawner keeps both kinds of names available.
// It fails where no such template exists ({user_server} of the escape
// scheme before the end of a path: {escaped_user_server} keeps the
// default server's trailing "--" there).
func SchemeFree(t string, scheme Scheme) (string, error) {
	if err := ValidateTemplate(t); err != nil {
		return "", err
	}
	prefix := "safe_"
	if scheme == SchemeEscape {
		prefix = "escaped_"
	}
	var b strings.Builder
	for i := 0; i < len(t); {
		switch {
		case strings.HasPrefix(t[i:], "{{"), strings.HasPrefix(t[i:], "}}"):
			b.WriteString(t[i : i+2])
			i += 2
		case t[i] == '{':
			j := strings.IndexByte(t[i:], '}')
			if j < 0 {
				return "", fmt.Errorf("%q: unclosed field", t)
			}
			field := t[i+1 : i+j]
			if schemeFields[field] {
				field = prefix + field
			}
			b.WriteString("{" + field + "}")
			i += j + 1
		default:
			b.WriteByte(t[i])
			i++
		}
	}
	free := b.String()
	for _, p := range subPathProbes {
		want, err := Expand(t, p.user, p.server, scheme)
		if err != nil {
			return "", err
		}
		for _, other := range []Scheme{SchemeSafe, SchemeEscape} {
			if got, err := Expand(free, p.user, p.server, other); err != nil || got != want {
				return "", fmt.Errorf("%q under the %s scheme cannot be written independently of the scheme (%q gives %q for user %q%s, not %q)",
					t, scheme, free, got, p.user, serverPart(p.server), want)
			}
		}
	}
	return free, nil
}

// MovedFromOf is the earlier places the settings (HomeStorage.Settings,
// as JSON) give the layout's init container, in order: what the hub was
// told.
func MovedFromOf(settingsJSON string) []string {
	var s struct {
		Inits []struct {
			Name string `json:"name"`
			Env  []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"env"`
		} `json:"init_containers"`
		Split *struct {
			Init struct {
				Name string `json:"name"`
				Env  []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"env"`
			} `json:"init_container"`
		} `json:"jupyter_home_split_from"`
	}
	if json.Unmarshal([]byte(settingsJSON), &s) != nil {
		return nil
	}
	env := map[string]string{}
	for _, c := range s.Inits {
		if c.Name == SharedInitContainer {
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
		}
	}
	if s.Split != nil && s.Split.Init.Name == SharedInitContainer {
		for _, e := range s.Split.Init.Env {
			env[e.Name] = e.Value
		}
	}
	var out []string
	for i := 0; env[MovedFromVar(i)] != ""; i++ {
		out = append(out, env[MovedFromVar(i)])
	}
	return out
}
