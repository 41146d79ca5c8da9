package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

func TestFunctionLabelSlug_unit(t *testing.T) {
	f := NewLabelSlugFunction()
	checkDefinition(t, f, "label_slug")
	for _, tc := range []struct{ in, want string }{
		{"Alice", "Alice"},
		{"", ""},
		{"mock@name", "mock-name---6241db84"},
		{"a--b", "a-b---90827a2e"},
		{"a\u212ab", "a\u212ab"},
	} {
		got, err := runFunction(t, f, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("label_slug(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	_, err := runFunction(t, f, "\xc3")
	wantArgError(t, err, 0, "value", "not valid UTF-8")
}

func TestAccFunctionLabelSlug(t *testing.T) {
	cases := []fnCase{
		// Label values allow upper case, '.' and '_': unchanged, where
		// safe_slug would hash.
		{"alice", fnCall("label_slug", "Alice"), "Alice"},
		{"mixed_case", fnCall("label_slug", "AbC"), "AbC"},
		{"underscore", fnCall("label_slug", "user_1"), "user_1"},
		{"dot", fnCall("label_slug", "ab.c"), "ab.c"},
		{"digit_first", fnCall("label_slug", "9a"), "9a"},
		{"plain", fnCall("label_slug", "a-b"), "a-b"},
		// The default server's empty server name stays empty.
		{"empty", fnCall("label_slug", ""), ""},
		{"max_length", fnCall("label_slug", strings.Repeat("x", 63)), strings.Repeat("x", 63)},
		// Invalid labels are hashed like safe_slug.
		{"email", fnCall("label_slug", "a@b.c"), "a-b-c---d648b243"},
		{"mock_name", fnCall("label_slug", "mock@name"), "mock-name---6241db84"},
		{"space", fnCall("label_slug", "Jupyter User"), "jupyter-user---8686dea4"},
		{"ends_with_dot", fnCall("label_slug", "AbC."), "abc---dbe8c5d1"},
		{"digit_dot", fnCall("label_slug", "9."), "x-9---99a1b84b"},
		{"leading_dash", fnCall("label_slug", "-x"), "x---a4209624"},
		{"trailing_dash", fnCall("label_slug", "x-"), "x---c8b60efc"},
		{"double_dash", fnCall("label_slug", "a--b"), "a-b---90827a2e"},
		{"too_long", fnCall("label_slug", strings.Repeat("x", 64)), "xxxxxxxxxxxxxxxxxxxxx---7ce10097"},
		// Upstream's case-insensitive check lets LATIN SMALL LETTER LONG S
		// through, and KELVIN SIGN, which OpenTofu's NFC normalisation has
		// already turned into an ASCII K.
		{"long_s_quirk", fnCall("label_slug", "a\u017fb"), "a\u017fb"},
		{"kelvin_nfc", fnCall("label_slug", "a\u212ab"), "aKb"},
		// Name and label of the same user differ.
		{"name_vs_label", `"${provider::jupyter::safe_slug("Alice")} ${provider::jupyter::label_slug("Alice")}"`, "alice---3bc51062 Alice"},
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps:                    []resource.TestStep{fnStep(t, cases)},
	})
}
