package kubespawner

import "unicode/utf8"

// MaxNameLength is the longest object name or label value KubeSpawner's
// validity predicates accept (a DNS label: 63 characters).
const MaxNameLength = 63

// Validator reports whether a string may be used unchanged. SafeSlug takes
// one; IsValidObjectName and IsValidLabel are the two KubeSpawner uses.
type Validator func(string) bool

func isLowerAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isASCIIAlnum(c byte) bool {
	return isLowerAlpha(c) || isDigit(c) || (c >= 'A' && c <= 'Z')
}

// IsValidObjectName reports whether s is a valid object name under
// KubeSpawner's strictest rule (slugs.is_valid_object_name, which is also
// its default predicate): 1 to 63 characters, only a-z, 0-9 and '-',
// starting with a lowercase letter and ending with a lowercase letter or
// digit. This is a DNS label under both RFC 1035 and RFC 1123. Dots are not
// allowed.
func IsValidObjectName(s string) bool {
	n := len(s)
	if n < 1 || n > MaxNameLength {
		// Non-ASCII strings can be longer in bytes than in code points,
		// but they fail the character check below anyway.
		return false
	}
	if !isLowerAlpha(s[0]) {
		return false
	}
	if last := s[n-1]; !isLowerAlpha(last) && !isDigit(last) {
		return false
	}
	for i := 0; i < n; i++ {
		c := s[i]
		if !isLowerAlpha(c) && !isDigit(c) && c != '-' {
			return false
		}
	}
	return true
}

// labelQuirkRunes are the non-ASCII code points that upstream's label
// pattern, [a-z0-9.\-_] compiled with re.IGNORECASE, also matches: Python's
// case-insensitive matching folds them onto i, i, s and k.
var labelQuirkRunes = map[rune]bool{
	'\u0130': true, // LATIN CAPITAL LETTER I WITH DOT ABOVE  -> i
	'\u0131': true, // LATIN SMALL LETTER DOTLESS I           -> i
	'\u017f': true, // LATIN SMALL LETTER LONG S              -> s
	'\u212a': true, // KELVIN SIGN                            -> k
}

// IsValidLabel reports whether KubeSpawner considers s a valid label value
// (slugs.is_valid_label): the empty string, or at most 63 characters that
// start and end with an ASCII letter or digit and otherwise contain only
// letters, digits, '.', '-' and '_'.
//
// Upstream checks the middle characters with a case-insensitive Python
// regular expression, which also accepts U+0130, U+0131, U+017F and U+212A
// anywhere but the first and last position. This function reproduces that,
// so it may accept a value that Kubernetes rejects (for example "a\u212ab");
// use IsValidLabelValue for the Kubernetes rule.
func IsValidLabel(s string) bool {
	if s == "" {
		return true
	}
	if utf8.RuneCountInString(s) > MaxNameLength {
		return false
	}
	if !isASCIIAlnum(s[0]) || !isASCIIAlnum(s[len(s)-1]) {
		return false
	}
	for _, r := range s {
		if r < utf8.RuneSelf {
			c := byte(r)
			if isASCIIAlnum(c) || c == '.' || c == '-' || c == '_' {
				continue
			}
			return false
		}
		if !labelQuirkRunes[r] {
			return false
		}
	}
	return true
}

// IsValidLabelValue reports whether s is a label value Kubernetes accepts:
// empty, or at most 63 ASCII characters from [A-Za-z0-9._-] that begin and
// end with an alphanumeric character.
func IsValidLabelValue(s string) bool {
	n := len(s)
	if n == 0 {
		return true
	}
	if n > MaxNameLength || !isASCIIAlnum(s[0]) || !isASCIIAlnum(s[n-1]) {
		return false
	}
	for i := 0; i < n; i++ {
		c := s[i]
		if !isASCIIAlnum(c) && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}
