package userset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Fix is what the errors tell a user to write.
const Fix = `users = jsonencode({ for u in var.users : u => {} })`

// Parse returns the usernames of s, sorted, each in Unicode NFC (the form
// OpenTofu gives every string, so a name in users is the same string as
// the name anywhere else in the configuration). The error names what is
// wrong; the caller adds where and Fix.
func Parse(s string) ([]string, error) {
	names, ok := parseCanonical(s)
	if !ok {
		var err error
		if names, err = parseJSON(s); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// ParseConfigured is Parse for a value the configuration sets: it also
// refuses what JupyterHub's validate_username refuses (CheckJupyterHub).
// A state written before keeps what Parse reads.
func ParseConfigured(s string) ([]string, error) {
	names, err := Parse(s)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := CheckJupyterHub(n); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// CheckJupyterHub refuses what JupyterHub's validate_username refuses: a
// "/" (a named server's home is keyed "user/server"), white space at
// either end.
func CheckJupyterHub(name string) error {
	switch {
	case strings.Contains(name, "/"):
		return fmt.Errorf("has the username %q, which holds \"/\": JupyterHub refuses such usernames", name)
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("has the username %q, which starts or ends with white space: JupyterHub refuses such usernames", name)
	}
	return nil
}

// Encode is the users value listing names, in the form jsonencode writes
// (keys sorted; <, > and & escaped as \u003c, \u003e, \u0026).
func Encode(names []string) string {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[n] = struct{}{}
	}
	b, err := json.Marshal(m)
	if err != nil { // a map of strings to empty structs always encodes
		panic(err)
	}
	return string(b)
}

// parseCanonical reads the plain form of a users value: {"a":{},"b":{}}
// with names that need no escape, in any order, with or without JSON
// whitespace between the tokens (a file written by jq or an editor, a
// final newline). It reports false for anything else (escapes, other
// values, repeated keys, names not in NFC or not valid UTF-8), which
// parseJSON then reads or refuses with a reason. It is much faster than the
// JSON decoder (BenchmarkParse; DESIGN.md's Cost at scale has the times).
func parseCanonical(s string) ([]string, bool) {
	return parseCanonicalObject(s, emptyValue)
}

// emptyValue takes the value {} (after its colon) off the front of rest.
func emptyValue(rest string) (string, bool) {
	rest, ok := strings.CutPrefix(rest, "{")
	if !ok {
		return "", false
	}
	return strings.CutPrefix(skipSpace(rest), "}")
}

// skipSpace is s without the JSON whitespace it starts with.
func skipSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\n' || s[0] == '\r' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

// parseCanonicalObject reads {"a":V,"b":V} with plain keys (see
// parseCanonical), whitespace allowed between the tokens, each value taken
// off by value, which reports false for a value it cannot read that way.
// The names come sorted; a name listed twice reports false (the decoder
// then says which).
func parseCanonicalObject(s string, value func(rest string) (string, bool)) ([]string, bool) {
	s = skipSpace(s)
	for len(s) > 0 && strings.IndexByte(" \n\r\t", s[len(s)-1]) >= 0 {
		s = s[:len(s)-1]
	}
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	body := skipSpace(s[1 : len(s)-1])
	if body == "" {
		return []string{}, true
	}
	names := make([]string, 0, strings.Count(body, `":`))
	sorted := true
	for {
		if len(body) == 0 || body[0] != '"' {
			return nil, false
		}
		end := strings.IndexByte(body[1:], '"')
		if end < 0 {
			return nil, false
		}
		name := body[1 : 1+end]
		if name == "" || strings.IndexByte(name, '\\') >= 0 || !plain(name) {
			return nil, false
		}
		rest := skipSpace(body[2+end:])
		if len(rest) == 0 || rest[0] != ':' {
			return nil, false
		}
		rest, ok := value(skipSpace(rest[1:]))
		if !ok {
			return nil, false
		}
		sorted = sorted && (len(names) == 0 || names[len(names)-1] < name)
		names = append(names, name)
		rest = skipSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, false
		}
		body = skipSpace(rest[1:])
	}
	if !sorted {
		slices.Sort(names)
		for i := 1; i < len(names); i++ {
			if names[i] == names[i-1] {
				return nil, false
			}
		}
	}
	return names, true
}

// plain reports whether a key can be taken as written: valid UTF-8 in NFC,
// without control characters (JSON requires those escaped) and without the
// characters jsonencode escapes.
func plain(name string) bool {
	ascii := true
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return ascii || utf8.ValidString(name) && norm.NFC.IsNormalString(name) && !strings.ContainsAny(name, "\u2028\u2029")
}

// parseJSON reads s with the JSON decoder, token by token, so that a
// repeated key is seen (a decoder into a map keeps the last one).
func parseJSON(s string) ([]string, error) {
	return parseObject(s, usersForm)
}

// form is what the values of an object from username to something are.
type form struct {
	value string                                     // what each username maps to, for the errors
	read  func(dec *json.Decoder, name string) error // reads and checks one value
}

var usersForm = form{value: "{}", read: emptyObject}

// parseObject reads s, a JSON object from each username to a value of f,
// token by token: the usernames, sorted, in NFC, each once.
func parseObject(s string, f form) ([]string, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("is not JSON (%v)", jsonError(err))
	}
	switch tok {
	case json.Delim('{'):
	case json.Delim('['):
		return nil, fmt.Errorf("is a JSON array; it must be a JSON object from each username to %s "+
			"(OpenTofu diffs an array in time that grows with the square of its length, in every plan)", f.value)
	default:
		return nil, fmt.Errorf("is the JSON value %s; it must be a JSON object from each username to %s", describe(tok), f.value)
	}
	seen := map[string]string{}
	var names []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("is not valid JSON (%v)", jsonError(err))
		}
		raw, ok := tok.(string)
		if !ok { // the decoder reports a key that is not a string as an error
			return nil, fmt.Errorf("is not valid JSON (an object key is %s)", describe(tok))
		}
		name, err := username(raw)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[name]; dup {
			if first == raw {
				return nil, fmt.Errorf("lists the username %q twice; list each user once", name)
			}
			return nil, fmt.Errorf("lists the username %q twice, as %+q and as %+q (the same name in Unicode NFC); list each user once", name, first, raw)
		}
		seen[name] = raw
		if err := f.read(dec, name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("is not valid JSON (%v)", jsonError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("has more after its JSON object; it must be one JSON object")
	}
	slices.Sort(names)
	return names, nil
}

// username is a key of users as a username: not empty, valid Unicode, in NFC.
func username(raw string) (string, error) {
	if raw == "" {
		return "", errors.New(`has the username "" (an empty string); a JupyterHub username has at least one character`)
	}
	if strings.ContainsRune(raw, utf8.RuneError) {
		return "", fmt.Errorf("has the username %q, which holds U+FFFD: an invalid escape (a lone UTF-16 surrogate) or invalid UTF-8", raw)
	}
	return norm.NFC.String(raw), nil
}

// emptyObject reads the value of a key, which must be {}.
func emptyObject(dec *json.Decoder, name string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("is not valid JSON (%v)", jsonError(err))
	}
	if tok != json.Delim('{') {
		if tok == json.Delim('[') {
			return fmt.Errorf("maps %q to an array; each username maps to {} (there are no per-user settings yet)", name)
		}
		return fmt.Errorf("maps %q to %s; each username maps to {} (there are no per-user settings yet)", name, describe(tok))
	}
	if dec.More() {
		return fmt.Errorf("maps %q to an object with attributes; each username maps to {} (there are no per-user settings yet)", name)
	}
	_, err = dec.Token()
	if err != nil {
		return fmt.Errorf("is not valid JSON (%v)", jsonError(err))
	}
	return nil
}

func describe(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", v)
	default:
		b, _ := json.Marshal(v)
		return string(bytes.TrimSpace(b))
	}
}

func jsonError(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends too early"
	}
	return err.Error()
}
