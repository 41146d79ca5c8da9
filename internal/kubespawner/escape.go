package kubespawner

import "strings"

// EscapeSlug applies KubeSpawner's legacy "escape" slug scheme
// (slugs.escape_slug, the only scheme of KubeSpawner <= 6):
//
//	escapism.escape(name, safe=set(a-z0-9), escape_char='-').lower()
//
// Every character other than a-z and 0-9 (including '-', the escape
// character, and uppercase letters) is replaced, for each byte of its UTF-8
// encoding, by '-' followed by the byte in hex without zero padding; the
// whole result is then lowercased. So '@' becomes "-40", '-' becomes "-2d",
// 'A' becomes "-41", 'ü' becomes "-c3-bc" and a newline becomes "-a".
//
// The result is not guaranteed to be a valid object name: it may start with
// '-' ("Capital" gives "-43apital") and has no length limit.
//
// Upstream input is always valid Unicode; for a Go string that is not valid
// UTF-8 the bytes are escaped one by one all the same.
func EscapeSlug(name string) string {
	const hexDigits = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(name))
	// The safe characters are ASCII, and every byte of a multi-byte UTF-8
	// sequence is >= 0x80, so escaping byte by byte equals escaping each
	// code point's UTF-8 bytes.
	for i := 0; i < len(name); i++ {
		c := name[i]
		if isLowerAlpha(c) || isDigit(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('-')
		if c >= 0x10 {
			b.WriteByte(hexDigits[c>>4])
		}
		b.WriteByte(hexDigits[c&0x0f])
	}
	return b.String()
}
