package kubespawner

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	// HashLength is the number of hex digits of SHA-256 kept in a slug.
	HashLength = 8
	// MinHashedLength is the smallest max length StripAndHash accepts:
	// one character of name, "---" and the hash.
	MinHashedLength = HashLength + 4
	// DefaultHashedLength is the max length SafeSlug hashes to when it is
	// given no max length (upstream: max_length or 32).
	DefaultHashedLength = 32
	// TemplateMaxLength is the per-field max length KubeSpawner uses when it
	// expands templates ({username}, {servername}, {user_server}).
	TemplateMaxLength = 48
)

// ErrInvalidUTF8 is returned (wrapped) for names that are not valid UTF-8.
// Upstream names are Python str values, which cannot hold such bytes.
var ErrInvalidUTF8 = errors.New("not valid UTF-8")

func checkUTF8(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q: %w", what, s, ErrInvalidUTF8)
	}
	return nil
}

// pyPrefix returns s[:n] with Python slice semantics for an ASCII string: a
// negative n counts from the end, and out-of-range bounds are clamped.
func pyPrefix(s string, n int) string {
	if n < 0 {
		n += len(s)
		if n < 0 {
			n = 0
		}
	}
	if n > len(s) {
		n = len(s)
	}
	return s[:n]
}

// ExtractSafeName returns the safe substring of name that hashed slugs start
// with (slugs._extract_safe_name):
//
//  1. lowercase with Python's str.lower (PyLower);
//  2. replace every run of characters other than a-z and 0-9 with one '-';
//  3. strip leading '-', keep the first maxLength characters, strip
//     trailing '-';
//  4. if the result starts with a digit, prefix "x-" and keep only its first
//     maxLength-2 characters;
//  5. if the result is empty, use "x".
//
// The result contains only a-z, 0-9 and '-' and starts with a letter. For
// maxLength >= 3 it is at most maxLength characters long. Smaller values
// follow Python slicing literally (a negative stop counts from the end), as
// upstream never calls it with less than 1. Step 4 can leave a trailing
// '-', e.g. ExtractSafeName("12-3", 5) is "x-12-".
func ExtractSafeName(name string, maxLength int) string {
	lower := PyLower(name)
	var b strings.Builder
	b.Grow(len(lower))
	inRun := false
	for _, r := range lower {
		if r < utf8.RuneSelf && (isLowerAlpha(byte(r)) || isDigit(byte(r))) {
			b.WriteByte(byte(r))
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
			inRun = true
		}
	}
	safe := strings.TrimLeft(b.String(), "-")
	safe = strings.TrimRight(pyPrefix(safe, maxLength), "-")
	if safe != "" && !isLowerAlpha(safe[0]) {
		safe = "x-" + pyPrefix(safe, maxLength-2)
	}
	if safe == "" {
		safe = "x"
	}
	return safe
}

// hash8 returns the first HashLength lowercase hex digits of the SHA-256 of
// the given byte strings joined by 0xFF (which never occurs in UTF-8).
func hash8(parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0xff})
		}
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:HashLength]
}

// StripAndHash returns an always-valid, collision-resistant slug for name of
// at most maxLength characters (slugs.strip_and_hash):
// ExtractSafeName(name, maxLength-11) + "---" + the first 8 hex digits of
// SHA-256 over the original UTF-8 bytes of name.
//
// It returns an error if maxLength is below MinHashedLength (upstream:
// ValueError "Cannot make safe names shorter than 12") or if name is not
// valid UTF-8.
func StripAndHash(name string, maxLength int) (string, error) {
	nameLength := maxLength - (HashLength + 3)
	if nameLength < 1 {
		return "", fmt.Errorf("max length %d: cannot make safe names shorter than %d", maxLength, MinHashedLength)
	}
	if err := checkUTF8("name", name); err != nil {
		return "", err
	}
	return ExtractSafeName(name, nameLength) + "---" + hash8(name), nil
}

// SafeSlug returns name unchanged if it is valid and short enough, and a
// hashed slug otherwise (slugs.safe_slug):
//
//   - a name containing "--" is always hashed, so it can never collide with
//     a "{username}--{servername}" join;
//   - a name for which isValid returns true, and which is at most maxLength
//     characters long when maxLength is set, is returned as is;
//   - anything else becomes StripAndHash(name, maxLength), or
//     StripAndHash(name, DefaultHashedLength) when maxLength is not set.
//
// isValid nil means IsValidObjectName (upstream's is_valid_default).
// maxLength 0 means "no max length" (Python None): valid names of up to 63
// characters pass and hashed names are at most 32 characters long. Inside
// templates KubeSpawner passes TemplateMaxLength (48).
//
// The max-length error of StripAndHash only happens when hashing is needed,
// as upstream: SafeSlug("abc", nil, 5) is "abc".
func SafeSlug(name string, isValid Validator, maxLength int) (string, error) {
	if err := checkUTF8("name", name); err != nil {
		return "", err
	}
	if maxLength < 0 {
		return "", fmt.Errorf("max length %d: cannot make safe names shorter than %d", maxLength, MinHashedLength)
	}
	if isValid == nil {
		isValid = IsValidObjectName
	}
	hashLen := maxLength
	if hashLen == 0 {
		hashLen = DefaultHashedLength
	}
	if strings.Contains(name, "--") {
		return StripAndHash(name, hashLen)
	}
	if isValid(name) && (maxLength == 0 || utf8.RuneCountInString(name) <= maxLength) {
		return name, nil
	}
	return StripAndHash(name, hashLen)
}

// MultiSlug joins several names into one slug with a single hash at the end
// (slugs.multi_slug): "{n1}--{n2}---{hash}". The hash is the first 8 hex
// digits of SHA-256 over the UTF-8 names joined by the byte 0xFF; each name
// contributes ExtractSafeName(name, per-name budget), where the budget is
// (maxLength-9) // len(names) - 2 (floor division).
//
// KubeSpawner uses it for {user_server} with [username, servername] and a
// max length of 48, which gives each name 17 characters. It returns an error
// if names is empty, a name is not valid UTF-8, or the per-name budget is
// below 2 (upstream: ValueError "Not enough characters for N names").
func MultiSlug(names []string, maxLength int) (string, error) {
	if len(names) == 0 {
		return "", errors.New("multi slug needs at least one name")
	}
	for _, n := range names {
		if err := checkUTF8("name", n); err != nil {
			return "", err
		}
	}
	available := maxLength - (HashLength + 1)
	perName := floorDiv(available, len(names))
	nameMax := perName - 2
	if nameMax < 2 {
		return "", fmt.Errorf("not enough characters for %d names: %d", len(names), maxLength)
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = ExtractSafeName(n, nameMax)
	}
	return strings.Join(parts, "--") + "---" + hash8(names...), nil
}

// floorDiv is Python's // for a positive divisor.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
