package kubespawner

import (
	"strings"
	"testing"
)

// Expected values are CPython's str.lower().
func TestPyLower(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"ABC xyz 123", "abc xyz 123"},
		{"\u0130", "i\u0307"},
		{"\u0130stanbul", "i\u0307stanbul"},
		{"\u212a", "k"},
		{"\u1e9e", "\u00df"},
		{"\u00dfE", "\u00dfe"},
		{"\u01c5", "\u01c6"},
		{"ÀÉÎ", "àéî"},
		{"ΑΣ", "ας"},
		{"ΑΣ Α", "ας α"},
		{"Σ", "σ"},
		{"ΑΣΑ", "ασα"},
		{"ΑΣ'", "ας'"},
		{"ΑΣ'Α", "ασ'α"},
		{"Α'Σ", "α'ς"},
		{"1Σ", "1σ"},
		{"ΑΣ\u0301", "ας\u0301"},
		{"ΑΣ.Α", "ασ.α"},
	} {
		if got := PyLower(tc.in); got != tc.want {
			t.Errorf("PyLower(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// Only U+0130 and U+212A lowercase to something with an ASCII letter or
// digit; everything else non-ASCII becomes part of a '-' run in slugs.
func TestPyLowerASCIIResults(t *testing.T) {
	for r := rune(0x80); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r < 0xe000 {
			continue
		}
		l := PyLower(string(r))
		if strings.IndexFunc(l, func(c rune) bool { return c < 0x80 && (isLowerAlpha(byte(c)) || isDigit(byte(c))) }) >= 0 {
			if r != 0x130 && r != 0x212a {
				t.Errorf("PyLower(%U) = %q contains ASCII alphanumerics", r, l)
			}
		}
	}
}
