package kubespawner

// The format-spec mini-language of Python's format(): how a str or int
// field value is padded, truncated and, for ints, signed, prefixed and
// grouped. Follows CPython's Python/formatter_unicode.c, including its error
// messages.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// formatSpec is a parsed format spec ([[fill]align][sign][z][#][0][width]
// [grouping][.precision][type]).
type formatSpec struct {
	fill      rune
	align     rune
	sign      rune
	noNeg0    bool
	alternate bool
	width     int // -1: not given
	sep       rune
	precision int // -1: not given
	typ       rune
}

func isAlignToken(r rune) bool { return r == '<' || r == '>' || r == '=' || r == '^' }
func isSignToken(r rune) bool  { return r == ' ' || r == '+' || r == '-' }

// readInt reads decimal digits at rs[*pos:], returning the value and how
// many digits were read.
func readInt(rs []rune, pos *int) (int, int, error) {
	acc, n := 0, 0
	for *pos < len(rs) {
		d, ok := decimalValue(rs[*pos])
		if !ok {
			break
		}
		acc = acc*10 + d
		if acc > maxPad {
			return 0, n, fmt.Errorf("width or precision larger than %d is not supported", maxPad)
		}
		*pos++
		n++
	}
	return acc, n, nil
}

// parseSpec parses a format spec for v in the order of CPython's
// parse_internal_render_format_spec: fill and alignment, sign, 'z', '#',
// '0', width, grouping, precision, type; then it checks the grouping
// against the type.
func parseSpec(rs []rune, v pyValue) (formatSpec, error) {
	fs := defaultSpec(v)
	p := &specParser{rs: rs}
	p.fillAlignAndFlags(&fs)
	if err := p.width(&fs); err != nil {
		return fs, err
	}
	if err := p.grouping(&fs); err != nil {
		return fs, err
	}
	if err := p.precision(&fs); err != nil {
		return fs, err
	}
	if err := p.conversionType(&fs, v); err != nil {
		return fs, err
	}
	return fs, checkGrouping(fs)
}

// defaultSpec is the empty spec for v: str left-aligned as 's', int
// right-aligned as 'd', space-filled, no width or precision.
func defaultSpec(v pyValue) formatSpec {
	if v.isInt {
		return formatSpec{fill: ' ', align: '>', width: -1, precision: -1, typ: 'd'}
	}
	return formatSpec{fill: ' ', align: '<', width: -1, precision: -1, typ: 's'}
}

// specParser reads a format spec left to right.
type specParser struct {
	rs  []rune
	pos int
}

func (p *specParser) left() int { return len(p.rs) - p.pos }

// peek reports whether r is the next rune.
func (p *specParser) peek(r rune) bool { return p.left() > 0 && p.rs[p.pos] == r }

// accept consumes the next rune when it is r.
func (p *specParser) accept(r rune) bool {
	if p.peek(r) {
		p.pos++
		return true
	}
	return false
}

// fillAlignAndFlags parses [[fill]align][sign][z][#][0].
func (p *specParser) fillAlignAndFlags(fs *formatSpec) {
	fillSet, alignSet := p.fillAndAlign(fs)
	if p.left() >= 1 && isSignToken(p.rs[p.pos]) {
		fs.sign = p.rs[p.pos]
		p.pos++
	}
	fs.noNeg0 = p.accept('z')
	fs.alternate = p.accept('#')
	// '0' before the width: fill with zeros unless a fill was given; for
	// an int (right-aligned by default) also align with '=' unless an
	// alignment was given.
	if !fillSet && p.accept('0') {
		fs.fill = '0'
		if !alignSet && fs.align == '>' {
			fs.align = '='
		}
	}
}

// fillAndAlign parses [[fill]align]: a fill is any character followed by
// an alignment token.
func (p *specParser) fillAndAlign(fs *formatSpec) (fillSet, alignSet bool) {
	switch {
	case p.left() >= 2 && isAlignToken(p.rs[p.pos+1]):
		fs.align, fs.fill = p.rs[p.pos+1], p.rs[p.pos]
		p.pos += 2
		return true, true
	case p.left() >= 1 && isAlignToken(p.rs[p.pos]):
		fs.align = p.rs[p.pos]
		p.pos++
		return false, true
	}
	return false, false
}

// width parses the minimum width, when given.
func (p *specParser) width(fs *formatSpec) error {
	w, n, err := readInt(p.rs, &p.pos)
	if err != nil {
		return formatErr("", "%s", err.Error())
	}
	if n > 0 {
		fs.width = w
	}
	return nil
}

// grouping parses the thousands separator: ',' or '_', not both.
func (p *specParser) grouping(fs *formatSpec) error {
	if p.accept(',') {
		fs.sep = ','
	}
	if p.accept('_') {
		if fs.sep != 0 {
			return formatErr("", "Cannot specify both ',' and '_'.")
		}
		fs.sep = '_'
	}
	if fs.sep == '_' && p.peek(',') {
		return formatErr("", "Cannot specify both ',' and '_'.")
	}
	return nil
}

// precision parses '.' and the precision, which must follow it.
func (p *specParser) precision(fs *formatSpec) error {
	if !p.accept('.') {
		return nil
	}
	prec, n, err := readInt(p.rs, &p.pos)
	if err != nil {
		return formatErr("", "%s", err.Error())
	}
	if n == 0 {
		return formatErr("", "Format specifier missing precision")
	}
	fs.precision = prec
	return nil
}

// conversionType parses the type: at most one character may be left.
func (p *specParser) conversionType(fs *formatSpec, v pyValue) error {
	switch p.left() {
	case 0:
		return nil
	case 1:
		fs.typ = p.rs[p.pos]
		p.pos++
		return nil
	}
	return formatErr("", "Invalid format specifier '%s' for object of type '%s'", string(p.rs), v.typeName())
}

// checkGrouping refuses a separator the type does not take: ',' goes
// with decimal and float types only, '_' also with 'b', 'o', 'x', 'X'.
func checkGrouping(fs formatSpec) error {
	if fs.sep == 0 {
		return nil
	}
	switch fs.typ {
	case 'd', 'e', 'f', 'g', 'E', 'G', '%', 'F':
		return nil
	case 'b', 'o', 'x', 'X':
		if fs.sep == '_' {
			return nil
		}
	}
	return formatErr("", "Cannot specify '%c' with '%s'.", fs.sep, convName(fs.typ))
}

// formatValue is Python's format(value, spec).
func formatValue(v pyValue, spec []rune) (string, error) {
	if len(spec) == 0 {
		return v.str(), nil
	}
	fs, err := parseSpec(spec, v)
	if err != nil {
		return "", err
	}
	if v.isInt {
		return formatInt(v.i, fs)
	}
	if fs.typ != 's' {
		return "", formatErr("", "Unknown format code '%s' for object of type 'str'", convName(fs.typ))
	}
	return formatStr(v.s, fs)
}

func formatStr(s string, fs formatSpec) (string, error) {
	switch {
	case fs.sign != 0:
		return "", formatErr("", "Sign not allowed in string format specifier")
	case fs.noNeg0:
		return "", formatErr("", "Negative zero coercion (z) not allowed in string format specifier")
	case fs.alternate:
		return "", formatErr("", "Alternate form (#) not allowed in string format specifier")
	case fs.align == '=':
		return "", formatErr("", "'=' alignment not allowed in string format specifier")
	}
	rs := []rune(s)
	if fs.precision >= 0 && len(rs) > fs.precision {
		rs = rs[:fs.precision]
	}
	return pad(string(rs), len(rs), fs.width, fs.align, fs.fill), nil
}

// pad aligns s (n code points) in a field of the given width.
func pad(s string, n, width int, align, fill rune) string {
	if width <= n {
		return s
	}
	total := width - n
	left := 0
	switch align {
	case '>':
		left = total
	case '^':
		left = total / 2
	}
	f := string(fill)
	return strings.Repeat(f, left) + s + strings.Repeat(f, total-left)
}

// formatInt formats an int the way CPython's format_long_internal does:
// check the spec, choose the base, write the digits and the sign, group
// the digits, then pad.
func formatInt(i int64, fs formatSpec) (string, error) {
	if fs.precision != -1 {
		return "", formatErr("", "Precision not allowed in integer format specifier")
	}
	if fs.noNeg0 {
		return "", formatErr("", "Negative zero coercion (z) not allowed in integer format specifier")
	}
	base, prefix, err := intBase(fs.typ)
	if err != nil {
		return "", err
	}
	if !fs.alternate {
		prefix = ""
	}
	sign := intSign(i, fs.sign)
	nonDigits := len(sign) + len(prefix)
	minWidth := 0
	if fs.fill == '0' && fs.align == '=' {
		minWidth = fs.width - nonDigits
	}
	grouped := groupDigits(intDigits(i, base, fs.typ), minWidth, fs.sep, base)
	return padNumber(sign+prefix, grouped, fs), nil
}

// intBase is the base and the alternate form's prefix of an int type.
func intBase(typ rune) (int, string, error) {
	switch typ {
	case 'd':
		return 10, "", nil
	case 'b':
		return 2, "0b", nil
	case 'o':
		return 8, "0o", nil
	case 'x':
		return 16, "0x", nil
	case 'X':
		return 16, "0X", nil
	case 'c', 'n', 'e', 'E', 'f', 'F', 'g', 'G', '%':
		return 0, "", formatErr("", "format type '%c' is not supported for integers in templates", typ)
	}
	return 0, "", formatErr("", "Unknown format code '%s' for object of type 'int'", convName(typ))
}

// intDigits is the magnitude of i in base, upper case for 'X'.
func intDigits(i int64, base int, typ rune) string {
	var digits string
	if i < 0 {
		// Avoid overflow on the most negative value.
		digits = strconv.FormatUint(uint64(-(i+1))+1, base)
	} else {
		digits = strconv.FormatInt(i, base)
	}
	if typ == 'X' {
		digits = strings.ToUpper(digits)
	}
	return digits
}

// intSign is the sign written before i: '-' for a negative value, else
// the spec's '+' or ' ', else nothing.
func intSign(i int64, sign rune) string {
	switch {
	case i < 0:
		return "-"
	case sign == '+':
		return "+"
	case sign == ' ':
		return " "
	}
	return ""
}

// padNumber pads a number (lead: its sign and prefix) to the spec's
// width; '=' puts the padding between the lead and the digits.
func padNumber(lead, grouped string, fs formatSpec) string {
	n := utf8.RuneCountInString(lead) + utf8.RuneCountInString(grouped)
	if fs.align == '=' && fs.width > n {
		return lead + strings.Repeat(string(fs.fill), fs.width-n) + grouped
	}
	return pad(lead+grouped, n, fs.width, fs.align, fs.fill)
}

// groupDigits inserts thousands separators (every 3 digits, every 4 for
// '_' in bases other than 10) and pads with zeros to minWidth the way
// CPython's _PyUnicode_InsertThousandsGrouping does.
func groupDigits(digits string, minWidth int, sep rune, base int) string {
	if sep == 0 {
		if len(digits) < minWidth {
			return strings.Repeat("0", minWidth-len(digits)) + digits
		}
		return digits
	}
	group := 3
	if base != 10 {
		group = 4
	}
	var parts []string // built from the right
	remaining := len(digits)
	first := true
	for {
		l := group
		if m := max(max(remaining, minWidth), 1); m < l {
			l = m
		}
		zeros := max(0, l-remaining)
		chars := max(0, min(remaining, l))
		chunk := strings.Repeat("0", zeros) + digits[remaining-chars:remaining]
		if !first {
			chunk += string(sep)
		}
		parts = append(parts, chunk)
		first = false
		remaining -= chars
		minWidth -= l
		if remaining <= 0 && minWidth <= 0 {
			break
		}
		minWidth--
	}
	var b strings.Builder
	for k := len(parts) - 1; k >= 0; k-- {
		b.WriteString(parts[k])
	}
	return b.String()
}
