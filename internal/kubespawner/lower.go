package kubespawner

import (
	"strings"
	"unicode"
)

// PyLower lowercases s the way Python's str.lower does.
//
// Python applies the full Unicode case mapping (UnicodeData.txt plus the
// unconditional entries of SpecialCasing.txt) and the Final_Sigma context
// rule; Go's strings.ToLower applies only the simple mapping. The two differ
// in exactly these places:
//
//   - U+0130 LATIN CAPITAL LETTER I WITH DOT ABOVE lowercases to two code
//     points, "i\u0307" (the only unconditional multi-character lowercase
//     mapping in SpecialCasing.txt), where Go gives plain "i";
//   - U+03A3 GREEK CAPITAL LETTER SIGMA lowercases to U+03C2 (final sigma)
//     when it ends a word: preceded by a cased letter and not followed by
//     one, skipping case-ignorable characters on both sides.
//
// Language-specific rules (Turkish, Lithuanian) are not applied, as in
// Python. Case tables come from Go's unicode package (Unicode 15.0.0, the
// database of Python 3.12).
//
// For slugs only the ASCII part of the result matters: U+0130 and U+212A
// KELVIN SIGN are the only non-ASCII code points whose lowercase contains an
// ASCII letter or digit.
func PyLower(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 2)
	for i, r := range rs {
		switch r {
		case '\u0130':
			b.WriteString("i\u0307")
		case '\u03a3':
			if isFinalSigma(rs, i) {
				b.WriteRune('\u03c2')
			} else {
				b.WriteRune('\u03c3')
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// isFinalSigma evaluates Unicode's Final_Sigma condition for rs[i]:
// \p{cased} \p{case-ignorable}* SIGMA !( \p{case-ignorable}* \p{cased} ).
func isFinalSigma(rs []rune, i int) bool {
	j := i - 1
	for j >= 0 && isCaseIgnorable(rs[j]) {
		j--
	}
	if j < 0 || !isCased(rs[j]) {
		return false
	}
	j = i + 1
	for j < len(rs) && isCaseIgnorable(rs[j]) {
		j++
	}
	return j == len(rs) || !isCased(rs[j])
}

// isCased is the derived property Cased: Lowercase, Uppercase or Lt.
func isCased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt,
		unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// wordBreakIgnorable lists the code points whose Word_Break property is
// MidLetter, MidNumLet or Single_Quote; with the categories Mn, Me, Cf, Lm
// and Sk they make up the derived property Case_Ignorable.
var wordBreakIgnorable = map[rune]bool{
	// Single_Quote
	'\'': true,
	// MidNumLet
	'.': true, '\u2018': true, '\u2019': true, '\u2024': true,
	'\ufe52': true, '\uff07': true, '\uff0e': true,
	// MidLetter
	':': true, '\u00b7': true, '\u0387': true, '\u055f': true,
	'\u05f4': true, '\u2027': true, '\ufe13': true, '\ufe55': true, '\uff1a': true,
}

// isCaseIgnorable is the derived property Case_Ignorable.
func isCaseIgnorable(r rune) bool {
	return wordBreakIgnorable[r] ||
		unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}
