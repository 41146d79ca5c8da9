package kubespawner

import (
	"fmt"
	"strings"
)

// A directory template as a pattern: each field is any run of the
// characters a KubeSpawner name can hold (slugs are lower-case letters,
// digits and "-"; a field may be empty, as a default server's name is),
// each other character itself. Only plain fields reach here
// (CheckSubPathTemplate).
type patToken struct {
	lit  byte
	star bool // any run of slug characters
	any  bool // any run of characters
}

func slugChar(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }

// Two things widen it, so that it holds every directory the template can
// give: KubeSpawner strips trailing "-" from an expansion unless the
// template ends in "-" (a default server's "x-{servername}" is "x"), so a
// "-" in the run of fields and "-" at the end may be missing (it becomes
// a field, which may be empty); and a file system may not tell upper from
// lower case (Azure Files, SMB), so letters are compared in lower case.
func pattern(t string) []patToken {
	out := tokens(t)
	if !strings.HasSuffix(t, "-") {
		for k := len(out) - 1; k >= 0 && (out[k].star || out[k].lit == '-'); k-- {
			out[k] = patToken{star: true}
		}
	}
	return out
}

// tokens is template t as written: each field a star, each other
// character itself (letters in lower case).
func tokens(t string) []patToken {
	var out []patToken
	for i := 0; i < len(t); {
		switch {
		case strings.HasPrefix(t[i:], "{{"), strings.HasPrefix(t[i:], "}}"):
			out = append(out, patToken{lit: t[i]})
			i += 2
		case t[i] == '{':
			j := strings.IndexByte(t[i:], '}')
			if j < 0 {
				j = len(t) - i - 1
			}
			out = append(out, patToken{star: true})
			i += j + 1
		default:
			c := t[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			out = append(out, patToken{lit: c})
			i++
		}
	}
	return out
}

// anyBelow is "/" and then anything: what makes a pattern's directories
// the ancestors of a longer one's.
var anyBelow = []patToken{{lit: '/'}, {star: true, any: true}}

// meet reports whether some string matches both a and b.
func meet(a, b []patToken) bool {
	type state struct{ i, j int }
	seen := map[state]bool{}
	queue := []state{{0, 0}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if seen[s] {
			continue
		}
		seen[s] = true
		if s.i == len(a) && s.j == len(b) {
			return true
		}
		if s.i < len(a) && a[s.i].star {
			queue = append(queue, state{s.i + 1, s.j})
		}
		if s.j < len(b) && b[s.j].star {
			queue = append(queue, state{s.i, s.j + 1})
		}
		if s.i == len(a) || s.j == len(b) {
			continue
		}
		x, y := a[s.i], b[s.j]
		switch {
		case !x.star && !y.star && x.lit == y.lit:
			queue = append(queue, state{s.i + 1, s.j + 1})
		case !x.star && y.star && matches(y, x.lit):
			queue = append(queue, state{s.i + 1, s.j})
		case x.star && !y.star && matches(x, y.lit):
			queue = append(queue, state{s.i, s.j + 1})
		}
	}
	return false
}

// matches reports whether star token p takes character c: a field takes
// slug characters; anyBelow's tail takes every character.
func matches(p patToken, c byte) bool { return p.any || slugChar(c) }

// SeparateTemplates fails when directory templates a and b (scheme-free,
// or both under one scheme) can give a directory that is, or lies above
// or below, one the other gives, for any two names: a home found by one
// could then be another user's home by the other. It is blind to which
// user each name is, so it also fails for templates that give one user
// the same directory (a rename would have nothing to do).
func SeparateTemplates(a, b string) error {
	pa, pb := pattern(a), pattern(b)
	switch {
	case meet(pa, pb):
		return fmt.Errorf("%q and %q can give the same directory to two users", a, b)
	case meet(append(pa, anyBelow...), pb):
		return fmt.Errorf("a directory %q gives can hold directories %q gives", a, b)
	case meet(pa, append(pb, anyBelow...)):
		return fmt.Errorf("a directory %q gives can hold directories %q gives", b, a)
	}
	return nil
}

// fieldsApart fails when two fields of template t share a path component
// with nothing between them but characters a name can hold: where one
// name ends and the next begins is then a guess ("{servername}{username}"
// gives user alice's server gpu, and user gpualice, "gpualice";
// "{servername}-{username}" gives "gpu-x-alice" to x-alice's server gpu and
// to alice's server gpu-x). {user_server} is one field.
func fieldsApart(t string) error {
	for _, comp := range strings.Split(t, "/") {
		fields, apart := 0, true
		for _, tok := range tokens(comp) {
			switch {
			case tok.star:
				if fields > 0 && !apart {
					return fmt.Errorf("%q has two fields in one directory name with only name characters between them: two users can get one directory. Put them in directories of their own, use {user_server}, or set them apart with a character names never have, e.g. \"{username}.{servername}\"", t)
				}
				fields++
				apart = false
			case !slugChar(tok.lit):
				apart = true
			}
		}
	}
	return nil
}

// NamesServer reports whether template t gives each named server a
// directory of its own (a field of the server's name).
func NamesServer(t string) bool {
	for _, f := range []string{"servername", "user_server"} {
		if strings.Contains(t, f+"}") {
			return true
		}
	}
	return false
}
