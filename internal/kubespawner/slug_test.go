package kubespawner

import (
	"errors"
	"strings"
	"testing"
)

// Vectors of test_safe_slug in jupyterhub/kubespawner tests/test_slugs.py:
// safe_slug(name) with the default (object name) predicate and no max
// length.
var upstreamSafeSlugVectors = []struct{ name, want string }{
	{"jupyter-alex", "jupyter-alex"},
	{"jupyter-Alex", "jupyter-alex---3a1c285c"},
	{"jupyter-üni", "jupyter-ni---a5aaf5dd"},
	{"endswith-", "endswith---165f1166"},
	{"user@email.com", "user-email-com---0925f997"},
	{"user-_@_emailß.com", "user-email-com---7e3a7efd"},
	{"has.dot", "has-dot---03e27fdf"},
	{"z9", "z9"},
	{"9z9", "x-9z9---224de202"},
	{"-start", "start---f587e2dc"},
	{"üser", "ser---73506260"},
	{"username--servername", "username-servername---d957f1de"},
	{"start---f587e2dc", "start-f587e2dc---cc5bb9c9"},
	{strings.Repeat("x", 63), strings.Repeat("x", 63)},
	{strings.Repeat("x", 64), "xxxxxxxxxxxxxxxxxxxxx---7ce10097"},
	{strings.Repeat("x", 65), "xxxxxxxxxxxxxxxxxxxxx---9537c5fd"},
	{"", "x---e3b0c442"},
}

func TestSafeSlugUpstream(t *testing.T) {
	for _, tc := range upstreamSafeSlugVectors {
		got, err := SafeSlug(tc.name, nil, 0)
		if err != nil || got != tc.want {
			t.Errorf("SafeSlug(%q) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
		// nil and IsValidObjectName are the same predicate.
		if got2, _ := SafeSlug(tc.name, IsValidObjectName, 0); got2 != got {
			t.Errorf("SafeSlug(%q, IsValidObjectName) = %q; want %q", tc.name, got2, got)
		}
	}
}

// Vectors of test_safe_slug_max_length in tests/test_slugs.py:
// safe_slug("x" * length, max_length=max_length); "error" is a ValueError.
func TestSafeSlugMaxLengthUpstream(t *testing.T) {
	for _, tc := range []struct {
		maxLength, length int
		want              string
	}{
		{16, 16, strings.Repeat("x", 16)},
		{16, 17, "xxxxx---d04fd59f"},
		{11, 16, "error"},
		{12, 16, "x---9c572959"},
	} {
		name := strings.Repeat("x", tc.length)
		got, err := SafeSlug(name, nil, tc.maxLength)
		if tc.want == "error" {
			if err == nil {
				t.Errorf("SafeSlug(x*%d, max %d) = %q; want an error", tc.length, tc.maxLength, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("SafeSlug(x*%d, max %d) = %q, %v; want %q", tc.length, tc.maxLength, got, err, tc.want)
		}
	}
}

// Vectors of test_safe_slug_label in tests/test_slugs.py:
// safe_slug(name, is_valid=is_valid_label).
func TestSafeSlugLabelUpstream(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", ""},
		{"x", "x"},
		{"a-b", "a-b"},
		{"9a", "9a"},
		{"9.", "x-9---99a1b84b"},
		{"AbC", "AbC"},
		{"AbC.", "abc---dbe8c5d1"},
		{"ab.c", "ab.c"},
		{"a@b.c", "a-b-c---d648b243"},
		{"-x", "x---a4209624"},
		{"x-", "x---c8b60efc"},
		{strings.Repeat("x", 63), strings.Repeat("x", 63)},
		{strings.Repeat("x", 64), "xxxxxxxxxxxxxxxxxxxxx---7ce10097"},
		{strings.Repeat("x", 65), "xxxxxxxxxxxxxxxxxxxxx---9537c5fd"},
	} {
		got, err := SafeSlug(tc.name, IsValidLabel, 0)
		if err != nil || got != tc.want {
			t.Errorf("SafeSlug(%q, IsValidLabel) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// Further cases, each checked against kubespawner's slugs.py run under
// CPython.
func TestSafeSlugMore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		isValid Validator
		max     int
		want    string
	}{
		// Python lowercases U+0130 to "i" + U+0307, so a '-' follows the i.
		{"İx", nil, 0, "i-x---3020b9f2"},
		// U+212A KELVIN SIGN lowercases to ASCII k.
		{"\u212aelvin", nil, 0, "kelvin---4a274a98"},
		{"ſ", nil, 0, "x---3a421dcc"},
		{"Alice", nil, TemplateMaxLength, "alice---3bc51062"},
		{"Alice", IsValidLabel, 0, "Alice"},
		{"user_1", IsValidLabel, 0, "user_1"},
		{"a.b", IsValidLabel, 0, "a.b"},
		{"a--b", IsValidLabel, 0, "a-b---90827a2e"},
		{"Jupyter User", IsValidLabel, 0, "jupyter-user---8686dea4"},
		{"Jupyter User", nil, TemplateMaxLength, "jupyter-user---8686dea4"},
		{"mock@name", nil, 0, "mock-name---6241db84"},
		{"a-very-long-name-that-is-too-long-for-sixty-four-character-labels", nil, 0, "a-very-long-name-that---29ac5fd2"},
		// Valid and short enough: returned even with a max length < 12.
		{"abc", nil, 5, "abc"},
		// Truncation leaves a digit first: "x-" + s[:max-2] may end in
		// '-', giving four hyphens before the hash (upstream's comment
		// says this cannot happen; it can).
		{"111111111111111111-a", nil, 0, "x-111111111111111111----f7f5e54e"},
		// With max length 12 the name budget is 1 and Python's s[:-1]
		// empties the digit part: the result is 13 characters long.
		{"9", nil, 12, "x----19581e27"},
		// The label quirk: upstream's case-insensitive label pattern
		// accepts U+212A in the middle, so the value passes unchanged.
		{"a\u212ab", IsValidLabel, 0, "a\u212ab"},
	} {
		got, err := SafeSlug(tc.name, tc.isValid, tc.max)
		if err != nil || got != tc.want {
			t.Errorf("SafeSlug(%q, max %d) = %q, %v; want %q", tc.name, tc.max, got, err, tc.want)
		}
	}
}

func TestSafeSlugErrors(t *testing.T) {
	if _, err := SafeSlug("a--b", nil, 11); err == nil {
		t.Error("SafeSlug with '--' and max 11: want an error")
	}
	if _, err := SafeSlug("x", nil, -1); err == nil {
		t.Error("SafeSlug with negative max: want an error")
	}
	_, err := SafeSlug("bad\xff", nil, 0)
	if !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("SafeSlug(invalid UTF-8) error = %v; want ErrInvalidUTF8", err)
	}
	for _, m := range []int{-5, 0, 1, 11} {
		if _, err := StripAndHash("x", m); err == nil {
			t.Errorf("StripAndHash max %d: want an error", m)
		}
	}
	if got, err := StripAndHash(strings.Repeat("x", 16), 12); err != nil || got != "x---9c572959" {
		t.Errorf("StripAndHash(x*16, 12) = %q, %v", got, err)
	}
}

func TestExtractSafeName(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want string
	}{
		{"Some Name", 17, "some-name"},
		{"user@email.com", 17, "user-email-com"},
		{"--a--b--", 10, "a-b"},
		{"", 10, "x"},
		{"@@@", 10, "x"},
		{"123", 10, "x-123"},
		{"12345", 5, "x-123"},
		{"12-3", 5, "x-12-"},
		{"abcdef", 3, "abc"},
		{"ab-cd", 3, "ab"},
		// Python slice semantics below max length 3.
		{"9abc", 2, "x-"},
		{"9", 1, "x-"},
	} {
		if got := ExtractSafeName(tc.name, tc.max); got != tc.want {
			t.Errorf("ExtractSafeName(%q, %d) = %q; want %q", tc.name, tc.max, got, tc.want)
		}
	}
}

func TestMultiSlug(t *testing.T) {
	for _, tc := range []struct {
		names []string
		max   int
		want  string
	}{
		// The intro table of docs/source/templates.md gives this value for
		// jupyter-{user_server}; KubeSpawner only uses multi_slug there
		// when the joined safe names exceed 48 characters (see
		// TestExpandDocsIntroTable).
		{[]string{"user@email.com", "Some Name"}, 48, "user-email-com--some-name---0c1fe94b"},
		{[]string{"user", "server"}, 48, "user--server---ff173834"},
		{[]string{"x", ""}, 48, "x--x---41add815"},
		{[]string{"abc", "def", "ghi"}, 48, "abc--def--ghi---380b27c9"},
		{[]string{"a"}, 13, "a---ca978112"},
		{[]string{"a-very-long-name-that-is-too-long-for-sixty-four-character-labels", "and-a-long-server-name-too"}, 48, "a-very-long-name--and-a-long-server---35f2bf74"},
	} {
		got, err := MultiSlug(tc.names, tc.max)
		if err != nil || got != tc.want {
			t.Errorf("MultiSlug(%q, %d) = %q, %v; want %q", tc.names, tc.max, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		names []string
		max   int
	}{
		{nil, 48},
		{[]string{"a"}, 12},
		{[]string{"a", "b"}, 16},
		{[]string{"a", "b"}, -100},
		{[]string{"a", "\xff"}, 48},
	} {
		if got, err := MultiSlug(tc.names, tc.max); err == nil {
			t.Errorf("MultiSlug(%q, %d) = %q; want an error", tc.names, tc.max, got)
		}
	}
}

func TestValidity(t *testing.T) {
	for _, tc := range []struct {
		s                  string
		object, label, k8s bool
	}{
		{"", false, true, true},
		{"a", true, true, true},
		{"9a", false, true, true},
		{"a9", true, true, true},
		{"a-", false, false, false},
		{"-a", false, false, false},
		{"a.b", false, true, true},
		{"a_b", false, true, true},
		{"Ab", false, true, true},
		{"a--b", true, true, true},
		{strings.Repeat("a", 63), true, true, true},
		{strings.Repeat("a", 64), false, false, false},
		{"abc\n", false, false, false},
		{"a\u212ab", false, true, false},
		{"a\u0130b", false, true, false},
		{"a\u0131b", false, true, false},
		{"a\u017fb", false, true, false},
		{"\u212a", false, false, false},
		{"aéb", false, false, false},
	} {
		if got := IsValidObjectName(tc.s); got != tc.object {
			t.Errorf("IsValidObjectName(%q) = %v", tc.s, got)
		}
		if got := IsValidLabel(tc.s); got != tc.label {
			t.Errorf("IsValidLabel(%q) = %v", tc.s, got)
		}
		if got := IsValidLabelValue(tc.s); got != tc.k8s {
			t.Errorf("IsValidLabelValue(%q) = %v", tc.s, got)
		}
	}
}
