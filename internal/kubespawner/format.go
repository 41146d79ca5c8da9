package kubespawner

// This file implements the subset of Python's str.format that KubeSpawner
// templates can reach: template.format(**fields) where every field is a str
// except {userid}, an int. The parser follows CPython's
// Objects/stringlib/unicode_format.h and the format-spec mini-language
// (formatspec.go) follows Python/formatter_unicode.c (Python 3.10+ rules
// for '0' padding), including the order in which errors are raised.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxPad bounds widths and precisions in format specs. Python would try to
// build strings of any size; a name template never needs more.
const maxPad = 1 << 16

// pyValue is a template field value: a Python str, or a Python int.
type pyValue struct {
	isInt bool
	s     string
	i     int64
}

func strValue(s string) pyValue { return pyValue{s: s} }

// str is Python's str(value).
func (v pyValue) str() string {
	if v.isInt {
		return strconv.FormatInt(v.i, 10)
	}
	return v.s
}

func (v pyValue) typeName() string {
	if v.isInt {
		return "int"
	}
	return "str"
}

// formatter expands one template. lookup resolves a top-level field name.
// In validate mode no real values exist: lookups return placeholders, index
// bounds are not checked and specs built from nested fields are not
// checked, because all of those depend on the values.
type formatter struct {
	lookup   func(name string) (pyValue, error)
	validate bool
}

// formatErr builds a *TemplateError without the template (filled in by the
// caller of expandFormat).
func formatErr(text, format string, args ...any) error {
	return &TemplateError{Text: text, Reason: fmt.Sprintf(format, args...)}
}

// expandFormat renders tmpl like Python's tmpl.format(**fields).
func (f *formatter) expandFormat(tmpl string) (string, error) {
	return f.build([]rune(tmpl), 2)
}

// parsedField is one replacement field, {name!conv:spec}.
type parsedField struct {
	raw        string // the field as written, braces included
	name       []rune
	conv       rune // 0 when absent
	spec       []rune
	specNested bool // spec contains replacement fields of its own
}

func (f *formatter) build(rs []rune, depth int) (string, error) {
	if depth <= 0 {
		return "", formatErr(string(rs), "Max string recursion exceeded: replacement fields may be nested only one level deep inside a format spec")
	}
	var out strings.Builder
	i, n := 0, len(rs)
	for i < n {
		start := i
		var c rune
		markup := false
		for i < n {
			c = rs[i]
			i++
			if c == '{' || c == '}' {
				markup = true
				break
			}
		}
		if !markup {
			out.WriteString(string(rs[start:]))
			break
		}
		atEnd := i >= n
		if c == '}' && (atEnd || rs[i] != '}') {
			return "", formatErr("}", "Single '}' encountered in format string at character %d (write '}}' for a literal brace)", i-1)
		}
		if atEnd && c == '{' {
			return "", formatErr("{", "Single '{' encountered in format string at character %d (write '{{' for a literal brace)", i-1)
		}
		if rs[i] == c {
			// "{{" or "}}": one literal brace.
			out.WriteString(string(rs[start:i]))
			i++
			continue
		}
		out.WriteString(string(rs[start : i-1]))
		fld, next, err := parseField(rs, i)
		if err != nil {
			return "", err
		}
		i = next
		s, err := f.render(fld, depth)
		if err != nil {
			return "", err
		}
		out.WriteString(s)
	}
	return out.String(), nil
}

// parseField parses the replacement field that starts at rs[i], just after
// its opening brace, and returns it with the index after its closing brace.
// Its steps are CPython's parse_field: the field name, up to '}', ':' or
// '!'; after '!' the conversion character; after ':' the format spec, up
// to the matching '}'.
func parseField(rs []rune, i int) (parsedField, int, error) {
	fr := fieldReader{rs: rs, open: i - 1}
	var fld parsedField
	i, stop, err := fr.name(i)
	if err != nil {
		return fld, i, err
	}
	fld.name = rs[fr.open+1 : i-1]
	if stop == '}' {
		fld.raw = fr.rawTo(i)
		return fld, i, nil
	}
	if stop == '!' {
		var closed bool
		fld.conv, i, closed, err = fr.conversion(i)
		if err != nil || closed {
			fld.raw = fr.rawTo(i)
			return fld, i, err
		}
	}
	return fr.spec(fld, i)
}

// fieldReader reads one replacement field of rs whose opening brace is at
// rs[open].
type fieldReader struct {
	rs   []rune
	open int
}

// rawTo is the field as written, from its opening brace up to end.
func (fr fieldReader) rawTo(end int) string {
	if end > len(fr.rs) {
		end = len(fr.rs)
	}
	return string(fr.rs[fr.open:end])
}

// name scans the field name from rs[i] (a '[' skips to its ']') and
// returns the index after the character that ends it, and that character.
func (fr fieldReader) name(i int) (int, rune, error) {
	n := len(fr.rs)
	for i < n {
		c := fr.rs[i]
		i++
		switch c {
		case '{':
			return i, c, formatErr(fr.rawTo(i), "unexpected '{' in field name %q", fr.rawTo(i))
		case '[':
			for i < n && fr.rs[i] != ']' {
				i++
			}
		case '}', ':', '!':
			return i, c, nil
		}
	}
	return i, 0, formatErr(fr.rawTo(n), "expected '}' before end of string in field %q", fr.rawTo(n))
}

// conversion reads the conversion character at rs[i], after '!', and what
// follows it: '}' closes the field (closed), ':' starts the spec. The
// returned index is after what was read.
func (fr fieldReader) conversion(i int) (conv rune, next int, closed bool, err error) {
	n := len(fr.rs)
	if i >= n {
		return 0, i, false, formatErr(fr.rawTo(n), "end of string while looking for conversion specifier in field %q", fr.rawTo(n))
	}
	conv = fr.rs[i]
	i++
	if i >= n {
		// No '}' or ':': the spec's scan reports the unmatched brace.
		return conv, i, false, nil
	}
	c := fr.rs[i]
	i++
	switch c {
	case '}':
		return conv, i, true, nil
	case ':':
		return conv, i, false, nil
	}
	return conv, i, false, formatErr(fr.rawTo(i), "expected ':' after conversion specifier in field %q", fr.rawTo(i))
}

// spec reads the format spec from rs[i] up to the '}' that matches the
// field's opening brace, noting whether it holds fields of its own.
func (fr fieldReader) spec(fld parsedField, i int) (parsedField, int, error) {
	n := len(fr.rs)
	specStart := i
	count := 1
	for i < n {
		c := fr.rs[i]
		i++
		switch c {
		case '{':
			fld.specNested = true
			count++
		case '}':
			count--
			if count == 0 {
				fld.spec = fr.rs[specStart : i-1]
				fld.raw = fr.rawTo(i)
				return fld, i, nil
			}
		}
	}
	return fld, i, formatErr(fr.rawTo(n), "unmatched '{' in format spec of field %q", fr.rawTo(n))
}

// render evaluates one replacement field: look the value up, apply
// [index] and .attribute parts, the conversion, then the format spec.
func (f *formatter) render(fld parsedField, depth int) (string, error) {
	v, err := f.fieldValue(fld)
	if err != nil {
		return "", err
	}
	switch fld.conv {
	case 0:
	case 's':
		v = strValue(v.str())
	case 'r':
		v = strValue(pyRepr(v))
	case 'a':
		v = strValue(pyASCII(v))
	default:
		return "", formatErr(fld.raw, "Unknown conversion specifier %s in field %q (valid: !s, !r, !a)", convName(fld.conv), fld.raw)
	}
	spec := fld.spec
	if fld.specNested {
		expanded, err := f.build(spec, depth-1)
		if err != nil {
			return "", err
		}
		if f.validate {
			// The spec depends on values we do not have.
			return v.str(), nil
		}
		spec = []rune(expanded)
	}
	out, err := formatValue(v, spec)
	if err != nil {
		if te, ok := err.(*TemplateError); ok {
			te.Text = fld.raw
			te.Reason += fmt.Sprintf(" (field %q)", fld.raw)
		}
		return "", err
	}
	return out, nil
}

func convName(c rune) string {
	if c > 32 && c < 127 {
		return string(c)
	}
	return fmt.Sprintf("\\x%x", c)
}

// fieldValue resolves the field name the way CPython's FieldNameIterator
// walks it: the first part via lookup, then any ".attr" and "[key]"
// parts.
func (f *formatter) fieldValue(fld parsedField) (pyValue, error) {
	name := fld.name
	k := 0
	for k < len(name) && name[k] != '.' && name[k] != '[' {
		k++
	}
	v, err := f.firstValue(fld, name[:k])
	if err != nil {
		return pyValue{}, err
	}
	rest := name[k:]
	for len(rest) > 0 {
		switch rest[0] {
		case '.':
			return pyValue{}, attributeErr(fld, rest)
		case '[':
			var key []rune
			key, rest, err = indexKey(fld, rest)
			if err != nil {
				return pyValue{}, err
			}
			if v, err = f.index(fld, v, key); err != nil {
				return pyValue{}, err
			}
		default:
			return pyValue{}, formatErr(fld.raw, "Only '.' or '[' may follow ']' in format field specifier %q", fld.raw)
		}
	}
	return v, nil
}

// firstValue looks up the first part of a field name: templates have
// named fields only.
func (f *formatter) firstValue(fld parsedField, first []rune) (pyValue, error) {
	if len(first) == 0 || allDecimal(first) {
		return pyValue{}, formatErr(fld.raw, "positional field %q is not supported: templates only have named fields such as {username} (Python raises IndexError)", fld.raw)
	}
	v, err := f.lookup(string(first))
	if err != nil {
		if te, ok := err.(*TemplateError); ok && te.Text == "" {
			te.Text = fld.raw
		}
		return pyValue{}, err
	}
	return v, nil
}

// attributeErr is the error for the ".attr" part at the start of rest:
// no field value has attributes a template may use.
func attributeErr(fld parsedField, rest []rune) error {
	j := 1
	for j < len(rest) && rest[j] != '.' && rest[j] != '[' {
		j++
	}
	if j == 1 {
		return formatErr(fld.raw, "Empty attribute in format string in field %q", fld.raw)
	}
	return formatErr(fld.raw, "attribute access %q in field %q is not supported", string(rest[:j]), fld.raw)
}

// indexKey reads the "[key]" part at the start of rest and returns the
// key and what follows the ']'.
func indexKey(fld parsedField, rest []rune) (key, after []rune, err error) {
	j := 1
	for j < len(rest) && rest[j] != ']' {
		j++
	}
	if j >= len(rest) {
		return nil, nil, formatErr(fld.raw, "Missing ']' in format string in field %q", fld.raw)
	}
	if j == 1 {
		return nil, nil, formatErr(fld.raw, "Empty attribute in format string in field %q", fld.raw)
	}
	return rest[1:j], rest[j+1:], nil
}

// index is v[key]: a str indexed by an integer gives one character. In
// validate mode the index is not checked against a value.
func (f *formatter) index(fld parsedField, v pyValue, key []rune) (pyValue, error) {
	idx, isIndex, err := decimalKey(key)
	if err != nil {
		return pyValue{}, formatErr(fld.raw, "%s in field %q", err.Error(), fld.raw)
	}
	if v.isInt {
		return pyValue{}, formatErr(fld.raw, "'int' object is not subscriptable in field %q", fld.raw)
	}
	if !isIndex {
		return pyValue{}, formatErr(fld.raw, "string indices must be integers, not 'str', in field %q", fld.raw)
	}
	if f.validate {
		return strValue("x"), nil
	}
	rs := []rune(v.s)
	if idx >= int64(len(rs)) {
		return pyValue{}, formatErr(fld.raw, "string index out of range in field %q (value %q)", fld.raw, v.s)
	}
	return strValue(string(rs[idx])), nil
}

// decimalValue returns the value of a Unicode decimal digit (category Nd),
// as Python's str.isdecimal / int() understand it.
func decimalValue(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < utf8.RuneSelf || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	// Decimal digits are encoded in contiguous runs of complete 0..9
	// sequences, so the offset inside the table range gives the value.
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) && rg.Stride == 1 {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}

func allDecimal(rs []rune) bool {
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if _, ok := decimalValue(r); !ok {
			return false
		}
	}
	return true
}

// decimalKey interprets an index key: an integer when it is all decimal
// digits, otherwise a string key.
func decimalKey(rs []rune) (int64, bool, error) {
	if !allDecimal(rs) {
		return 0, false, nil
	}
	var acc int64
	for _, r := range rs {
		d, _ := decimalValue(r)
		if acc > (1<<63-1-int64(d))/10 {
			return 0, true, fmt.Errorf("Too many decimal digits in format string") //nolint:staticcheck // Python's own message, kept word for word
		}
		acc = acc*10 + int64(d)
	}
	return acc, true, nil
}

// pyRepr is Python's repr() of v.
func pyRepr(v pyValue) string { return quoted(v, pyPrintable) }

// pyASCII is Python's ascii() of v: repr() with every non-ASCII character
// escaped.
func pyASCII(v pyValue) string { return quoted(v, func(rune) bool { return false }) }

// quoted is the repr() of v, keeping the non-ASCII characters for which
// keep is true and escaping the others.
func quoted(v pyValue, keep func(rune) bool) string {
	if v.isInt {
		return v.str()
	}
	s := v.s
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteRune(quote)
	for _, r := range s {
		switch {
		case r == quote || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case keep(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteRune(quote)
	return b.String()
}

// pyPrintable is Python's str.isprintable for one character: everything
// except categories Cc, Cf, Cs, Co, Cn, Zl, Zp and Zs, but space is
// printable.
func pyPrintable(r rune) bool {
	if r == ' ' {
		return true
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs, unicode.Co, unicode.Zl, unicode.Zp, unicode.Zs) {
		return false
	}
	// Cn: not assigned to any category.
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}
