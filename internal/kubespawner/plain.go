package kubespawner

import (
	"strings"
	"sync"
	"sync/atomic"
)

// plainTemplate is a template of literal text and name fields only
// ({username}, {servername}, {user_server} and their safe_, escaped_ and
// unescaped_ forms), with no doubled braces, conversions, indexes, format
// specs or fields that need Values beyond the names. Python's str.format
// renders such a template as its literal parts and its fields' values in
// turn, so expandPlain concatenates them without the formatter: a plan
// expands the home template once per claim and once per listed user, and
// the formatter's parse was most of that time (20,000 users: ~40,000
// expansions per plan).
type plainTemplate struct {
	lits   []string // lits[i] comes before fields[i]; one more than fields
	fields []string
}

// parsePlain returns t as a plainTemplate, or nil when it is not one (the
// formatter then expands it, and reports any error).
func parsePlain(t string) *plainTemplate {
	p := &plainTemplate{}
	for {
		i := strings.IndexAny(t, "{}")
		if i < 0 {
			p.lits = append(p.lits, t)
			return p
		}
		if t[i] == '}' {
			return nil // "}}" or a single '}'
		}
		j := strings.IndexAny(t[i+1:], "{}")
		if j < 0 || t[i+1+j] != '}' {
			return nil // "{{", a nested or an unclosed field
		}
		name := t[i+1 : i+1+j]
		if !plainField(name) {
			return nil
		}
		p.lits = append(p.lits, t[:i])
		p.fields = append(p.fields, name)
		t = t[i+2+j:]
	}
}

// plainField says whether a plainTemplate may hold the field, written
// exactly so (no spaces, conversion, index or spec): the name fields, those
// userField gives.
func plainField(name string) bool {
	_, ok, _ := userField(name, Values{}, DefaultScheme, func() (*UserFields, error) { return &UserFields{}, nil })
	return ok
}

// plainCache holds the templates parsed so far (*plainTemplate, nil for
// one that is not plain), at most plainCacheSize of them: a provider sees
// a few templates, a fuzzer many.
var (
	plainCache     sync.Map
	plainCached    atomic.Int32
	plainCacheSize = int32(256)
)

func lookupPlain(t string) *plainTemplate {
	if v, ok := plainCache.Load(t); ok {
		if p, ok := v.(*plainTemplate); ok {
			return p
		}
	}
	p := parsePlain(t)
	// Counted only until full: a full cache is not counted any further.
	if plainCached.Load() < plainCacheSize && plainCached.Add(1) <= plainCacheSize {
		plainCache.Store(t, p)
	}
	return p
}

// expandPlain expands a plain template as ExpandValues does; ok is false
// when the template is not plain or a field's value cannot be computed,
// and the formatter then expands it (and reports the error).
func expandPlain(template string, v Values, scheme Scheme, fields func() (*UserFields, error)) (string, bool) {
	p := lookupPlain(template)
	if p == nil {
		return "", false
	}
	var b strings.Builder
	for i, name := range p.fields {
		s, ok, err := userField(name, v, scheme, fields)
		if err != nil || !ok {
			return "", false
		}
		b.WriteString(p.lits[i])
		b.WriteString(s)
	}
	b.WriteString(p.lits[len(p.fields)])
	return trimHyphens(template, b.String()), true
}
