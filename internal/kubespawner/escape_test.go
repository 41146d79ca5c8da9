package kubespawner

import "testing"

// The "Examples" table of jupyterhub/kubespawner docs/source/templates.md
// (section "Upgrading from kubespawner < 7"): each name under the escape
// scheme and under the safe scheme, where the safe column is a template
// field (max length 48).
var docsSchemeTable = []struct{ name, escape, safe string }{
	{"username", "username", "username"},
	{"has-hyphen", "has-2dhyphen", "has-hyphen"},
	{"Capital", "-43apital", "capital---1a1cf792"},
	{"user@email.com", "user-40email-2ecom", "user-email-com---0925f997"},
	{"a-very-long-name-that-is-too-long-for-sixty-four-character-labels", "a-2dvery-2dlong-2dname-2dthat-2dis-2dtoo-2dlong-2dfor-2dsixty-2dfour-2dcharacter-2dlabels", "a-very-long-name-that-is-too-long-for---29ac5fd2"},
	{"ALLCAPS", "-41-4c-4c-43-41-50-53", "allcaps---27c6794c"},
}

func TestDocsSchemeTable(t *testing.T) {
	for _, tc := range docsSchemeTable {
		if got := EscapeSlug(tc.name); got != tc.escape {
			t.Errorf("EscapeSlug(%q) = %q; want %q", tc.name, got, tc.escape)
		}
		if got, err := SafeSlug(tc.name, nil, TemplateMaxLength); err != nil || got != tc.safe {
			t.Errorf("SafeSlug(%q, 48) = %q, %v; want %q", tc.name, got, err, tc.safe)
		}
		for scheme, want := range map[Scheme]string{SchemeEscape: tc.escape, SchemeSafe: tc.safe} {
			if got, err := Expand("{username}", tc.name, "", scheme); err != nil || got != want {
				t.Errorf("Expand({username}, %q, %s) = %q, %v; want %q", tc.name, scheme, got, err, want)
			}
		}
	}
}

func TestEscapeSlug(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"", ""},
		{"abc123", "abc123"},
		{"@", "-40"},
		{".", "-2e"},
		{"-", "-2d"},
		{"A", "-41"},
		{"ü", "-c3-bc"},
		// Unpadded hex: a byte below 0x10 gives one digit.
		{"a\nb", "a-ab"},
		{"\x00", "-0"},
		{"😀", "-f0-9f-98-80"},
		// Names from upstream issue logs (zero-to-jupyterhub-k8s #3536, #3574).
		{"abc000@uit.no", "abc000-40uit-2eno"},
		{"test@example.org", "test-40example-2eorg"},
		{"needs-Escape", "needs-2d-45scape"},
	} {
		if got := EscapeSlug(tc.name); got != tc.want {
			t.Errorf("EscapeSlug(%q) = %q; want %q", tc.name, got, tc.want)
		}
	}
}
