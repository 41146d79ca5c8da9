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

func parseSpec(rs []rune, v pyValue) (formatSpec, error) {
	defType, defAlign := 's', '<'
	if v.isInt {
		defType, defAlign = 'd', '>'
	}
	fs := formatSpec{fill: ' ', align: defAlign, width: -1, precision: -1, typ: defType}
	pos, end := 0, len(rs)
	fillSet, alignSet := false, false
	if end-pos >= 2 && isAlignToken(rs[pos+1]) {
		fs.align, fs.fill = rs[pos+1], rs[pos]
		fillSet, alignSet = true, true
		pos += 2
	} else if end-pos >= 1 && isAlignToken(rs[pos]) {
		fs.align = rs[pos]
		alignSet = true
		pos++
	}
	if end-pos >= 1 && isSignToken(rs[pos]) {
		fs.sign = rs[pos]
		pos++
	}
	if end-pos >= 1 && rs[pos] == 'z' {
		fs.noNeg0 = true
		pos++
	}
	if end-pos >= 1 && rs[pos] == '#' {
		fs.alternate = true
		pos++
	}
	if !fillSet && end-pos >= 1 && rs[pos] == '0' {
		fs.fill = '0'
		if !alignSet && defAlign == '>' {
			fs.align = '='
		}
		pos++
	}
	w, n, err := readInt(rs, &pos)
	if err != nil {
		return fs, formatErr("", "%s", err.Error())
	}
	if n > 0 {
		fs.width = w
	}
	if end-pos > 0 && rs[pos] == ',' {
		fs.sep = ','
		pos++
	}
	if end-pos > 0 && rs[pos] == '_' {
		if fs.sep != 0 {
			return fs, formatErr("", "Cannot specify both ',' and '_'.")
		}
		fs.sep = '_'
		pos++
	}
	if end-pos > 0 && rs[pos] == ',' && fs.sep == '_' {
		return fs, formatErr("", "Cannot specify both ',' and '_'.")
	}
	if end-pos > 0 && rs[pos] == '.' {
		pos++
		p, n, err := readInt(rs, &pos)
		if err != nil {
			return fs, formatErr("", "%s", err.Error())
		}
		if n == 0 {
			return fs, formatErr("", "Format specifier missing precision")
		}
		fs.precision = p
	}
	if end-pos > 1 {
		return fs, formatErr("", "Invalid format specifier '%s' for object of type '%s'", string(rs), v.typeName())
	}
	if end-pos == 1 {
		fs.typ = rs[pos]
	}
	if fs.sep != 0 {
		switch fs.typ {
		case 'd', 'e', 'f', 'g', 'E', 'G', '%', 'F':
		case 'b', 'o', 'x', 'X':
			if fs.sep != '_' {
				return fs, formatErr("", "Cannot specify '%c' with '%s'.", fs.sep, convName(fs.typ))
			}
		default:
			return fs, formatErr("", "Cannot specify '%c' with '%s'.", fs.sep, convName(fs.typ))
		}
	}
	return fs, nil
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

func formatInt(i int64, fs formatSpec) (string, error) {
	if fs.precision != -1 {
		return "", formatErr("", "Precision not allowed in integer format specifier")
	}
	if fs.noNeg0 {
		return "", formatErr("", "Negative zero coercion (z) not allowed in integer format specifier")
	}
	base, prefix := 10, ""
	switch fs.typ {
	case 'd':
	case 'b':
		base, prefix = 2, "0b"
	case 'o':
		base, prefix = 8, "0o"
	case 'x':
		base, prefix = 16, "0x"
	case 'X':
		base, prefix = 16, "0X"
	case 'c', 'n', 'e', 'E', 'f', 'F', 'g', 'G', '%':
		return "", formatErr("", "format type '%c' is not supported for integers in templates", fs.typ)
	default:
		return "", formatErr("", "Unknown format code '%s' for object of type 'int'", convName(fs.typ))
	}
	if !fs.alternate {
		prefix = ""
	}
	neg := i < 0
	var digits string
	if neg {
		// Avoid overflow on the most negative value.
		digits = strconv.FormatUint(uint64(-(i+1))+1, base)
	} else {
		digits = strconv.FormatInt(i, base)
	}
	if fs.typ == 'X' {
		digits = strings.ToUpper(digits)
	}
	sign := ""
	switch {
	case neg:
		sign = "-"
	case fs.sign == '+':
		sign = "+"
	case fs.sign == ' ':
		sign = " "
	}
	nonDigits := len(sign) + len(prefix)
	minWidth := 0
	if fs.fill == '0' && fs.align == '=' {
		minWidth = fs.width - nonDigits
	}
	grouped := groupDigits(digits, minWidth, fs.sep, base)
	n := nonDigits + utf8.RuneCountInString(grouped)
	padding := fs.width - n
	if padding <= 0 {
		return sign + prefix + grouped, nil
	}
	f := string(fs.fill)
	switch fs.align {
	case '<':
		return sign + prefix + grouped + strings.Repeat(f, padding), nil
	case '^':
		l := padding / 2
		return strings.Repeat(f, l) + sign + prefix + grouped + strings.Repeat(f, padding-l), nil
	case '=':
		return sign + prefix + strings.Repeat(f, padding) + grouped, nil
	default: // '>'
		return strings.Repeat(f, padding) + sign + prefix + grouped, nil
	}
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
