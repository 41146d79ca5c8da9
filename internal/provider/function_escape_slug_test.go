package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

func TestFunctionEscapeSlug_unit(t *testing.T) {
	f := NewEscapeSlugFunction()
	checkDefinition(t, f, "escape_slug")
	for _, tc := range []struct{ in, want string }{
		{"username", "username"},
		{"Capital", "-43apital"},
		{"user@email.com", "user-40email-2ecom"},
		{"", ""},
	} {
		got, err := runFunction(t, f, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("escape_slug(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	_, err := runFunction(t, f, "a\xffb")
	wantArgError(t, err, 0, "value", "not valid UTF-8")
}

func TestAccFunctionEscapeSlug(t *testing.T) {
	cases := []fnCase{
		// The table of KubeSpawner's templates documentation.
		{"plain", fnCall("escape_slug", "username"), "username"},
		{"hyphen", fnCall("escape_slug", "has-hyphen"), "has-2dhyphen"},
		{"capital", fnCall("escape_slug", "Capital"), "-43apital"},
		{"email", fnCall("escape_slug", "user@email.com"), "user-40email-2ecom"},
		{"long", fnCall("escape_slug", "a-very-long-name-that-is-too-long-for-sixty-four-character-labels"),
			"a-2dvery-2dlong-2dname-2dthat-2dis-2dtoo-2dlong-2dfor-2dsixty-2dfour-2dcharacter-2dlabels"},
		{"allcaps", fnCall("escape_slug", "ALLCAPS"), "-41-4c-4c-43-41-50-53"},
		// Single characters: one escape per UTF-8 byte, hex not padded.
		{"at", fnCall("escape_slug", "@"), "-40"},
		{"dot", fnCall("escape_slug", "."), "-2e"},
		{"dash", fnCall("escape_slug", "-"), "-2d"},
		{"umlaut", fnCall("escape_slug", "ü"), "-c3-bc"},
		{"newline", fnCall("escape_slug", "a\nb"), "a-ab"},
		{"emoji", fnCall("escape_slug", "😀"), "-f0-9f-98-80"},
		{"empty", fnCall("escape_slug", ""), ""},
		// Names from zero-to-jupyterhub upgrade reports.
		{"uit", fnCall("escape_slug", "abc000@uit.no"), "abc000-40uit-2eno"},
		{"example_org", fnCall("escape_slug", "test@example.org"), "test-40example-2eorg"},
		{"needs_escape", fnCall("escape_slug", "needs-Escape"), "needs-2d-45scape"},
		// A legacy claim name built by hand.
		{"legacy_claim", `"claim-${provider::jupyter::escape_slug("test@example.org")}--${provider::jupyter::escape_slug("named")}"`,
			"claim-test-40example-2eorg--named"},
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps:                    []resource.TestStep{fnStep(t, cases)},
	})
}
