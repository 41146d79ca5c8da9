package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

func TestFunctionExpandTemplate_unit(t *testing.T) {
	f := NewExpandTemplateFunction()
	checkDefinition(t, f, "expand_template")
	for _, tc := range []struct{ template, user, server, scheme, want string }{
		{"claim-{username}", "Alice", "", "safe", "claim-alice---3bc51062"},
		{"claim-{username}", "Alice", "", "escape", "claim--41lice"},
		{"claim-{username}--{servername}", "alice", "", "safe", "claim-alice"},
		{"jupyter-{user_server}", "user", "server", "safe", "jupyter-user--server"},
	} {
		got, err := runFunction(t, f, tc.template, tc.user, tc.server, tc.scheme)
		if err != nil || got != tc.want {
			t.Errorf("expand_template(%q, %q, %q, %q) = %q, %v; want %q", tc.template, tc.user, tc.server, tc.scheme, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		args      [4]string
		pos       int64
		fragments []string
	}{
		{[4]string{"claim-{username}", "alice", "", "legacy"}, 3, []string{`"legacy"`, `"safe"`, `"escape"`}},
		{[4]string{"claim-{username}", "alice", "", ""}, 3, []string{`""`, `"safe"`}},
		{[4]string{"claim-{nope}", "alice", "", "safe"}, 0, []string{"unknown field {nope}", "{username}", "{{"}},
		{[4]string{"claim-{username", "alice", "", "safe"}, 0, []string{"expected '}'", "str.format"}},
		{[4]string{"claim-}", "alice", "", "safe"}, 0, []string{"Single '}'"}},
		{[4]string{"{username:d}", "alice", "", "safe"}, 0, []string{"Unknown format code 'd'"}},
		{[4]string{"{hubnamespace}-{username}", "alice", "", "safe"}, 0, []string{"{hubnamespace} cannot be rendered", "replace("}},
		{[4]string{"claim-{userid}", "alice", "", "safe"}, 0, []string{"{userid} cannot be rendered"}},
		{[4]string{"{unescaped_username[9]}", "alice", "", "safe"}, 0, []string{`user "alice"`, "out of range"}},
		{[4]string{"claim-\xff", "alice", "", "safe"}, 0, []string{"template", "not valid UTF-8"}},
		{[4]string{"claim-{username}", "al\xffice", "", "safe"}, 1, []string{"username", "not valid UTF-8"}},
		{[4]string{"claim-{username}", "alice", "\xff", "safe"}, 2, []string{"servername", "not valid UTF-8"}},
	} {
		_, err := runFunction(t, f, tc.args[:]...)
		wantArgError(t, err, tc.pos, tc.fragments...)
	}
}

func TestAccFunctionExpandTemplate(t *testing.T) {
	long := "a-very-long-name-that-is-too-long-for-sixty-four-character-labels"
	call := func(template, user, server, scheme string) string {
		return fnCall("expand_template", template, user, server, scheme)
	}
	cases := []fnCase{
		// KubeSpawner's own spawner tests (default templates, safe scheme).
		{"pod_default", call("jupyter-{user_server}", "user", "", "safe"), "jupyter-user"},
		{"pod_named", call("jupyter-{user_server}", "user", "server", "safe"), "jupyter-user--server"},
		{"pod_escaping", call("jupyter-{user_server}", "some_user", "test-server!", "safe"),
			"jupyter-some-user---7d3a4d4e--test-server---cb54a9af"},
		{"custom_template", call("prefix-{user_server}-suffix", "some_user", "", "safe"), "prefix-some-user---7d3a4d4e-suffix"},
		{"collision_1", call("claim-{user_server}", "user-has-dash", "", "safe"), "claim-user-has-dash"},
		{"collision_2", call("claim-{user_server}", "user-has", "dash", "safe"), "claim-user-has--dash"},
		{"email_user", call("user-{username}", "mock@name", "", "safe"), "user-mock-name---6241db84"},
		{"digit_user", call("{username}", "9user@email.com", "", "safe"), "x-9user-email-com---08f58cbd"},
		{"upgrade_new", call("claim-{user_server}", "needs-Escape", "server", "safe"), "claim-needs-escape---716ef4ab--server"},
		// Upper case under both schemes.
		{"alice_safe", call("claim-{username}", "Alice", "", "safe"), "claim-alice---3bc51062"},
		{"alice_escape", call("claim-{username}", "Alice", "", "escape"), "claim--41lice"},
		{"explicit_fields", call("{escaped_username}/{safe_username}/{unescaped_username}", "Alice", "", "escape"),
			"-41lice/alice---3bc51062/Alice"},
		// The legacy templates under the escape scheme, and the trailing
		// '-' rule that drops "--" for a default server.
		{"legacy_default", call("claim-{username}--{servername}", "user", "", "escape"), "claim-user"},
		{"legacy_named", call("claim-{username}--{servername}", "needs-Escape", "server", "escape"), "claim-needs-2d-45scape--server"},
		{"legacy_default_safe", call("claim-{username}--{servername}", "connectip", "", "safe"), "claim-connectip"},
		{"z2jh_legacy", call("claim-{username}{servername}", "test@example.org", "named", "escape"), "claim-test-40example-2eorgnamed"},
		{"escape_user_server", call("claim-{user_server}", "abc000@uit.no", "", "escape"), "claim-abc000-40uit-2eno"},
		{"escape_named", call("claim-{user_server}", "test@example.org", "named", "escape"), "claim-test-40example-2eorg--named"},
		// A template ending in '-' keeps it; only the end is stripped.
		{"keeps_dash", call("{unescaped_username}-", "mock@name", "", "safe"), "mock@name-"},
		{"only_dashes", call("--", "mock@name", "", "safe"), "--"},
		{"inner_dashes", call("{escaped_user_server}-suffix", "user", "", "safe"), "user---suffix"},
		// Long names: 48 characters per field, then one hash for both.
		{"long_field", call("{username}", long, "", "safe"), "a-very-long-name-that-is-too-long-for---29ac5fd2"},
		{"long_pod", call("jupyter-{user_server}", long, "and-a-long-server-name-too", "safe"),
			"jupyter-a-very-long-name--and-a-long-server---35f2bf74"},
		{"plus_two_rule", call("{user_server}", strings.Repeat("x", 47), "", "safe"), "xxxxxxxxxxxxxxxxx--x---cfcbdd85"},
		{"two_hashes", call("jupyter-{user_server}", "user@email.com", "Some Name", "safe"),
			"jupyter-user-email-com---0925f997--some-name---3a8b1764"},
		// Python str.format: literal braces, format specs, conversions.
		{"literal_braces", call("VAR4-{{username}}-{{SHELL}}", "user1", "", "safe"), "VAR4-{username}-{SHELL}"},
		{"format_spec", call("{username:*^19}", "Zoë@x", "", "safe"), "**zo-x---df0ee38c**"},
		{"conversion", call("{unescaped_username!r}", "Zoë@x", "", "safe"), "'Zoë@x'"},
		{"index", call("{unescaped_username[2]}", "Zoë@x", "", "safe"), "ë"},
	}
	// A realistic use: the claim of every user in a list.
	users := `["alice", "Alice", "user@email.com", "9user@email.com"]`
	mapStep := resource.TestStep{
		Config: acctest.AdminConfig(t, `output "claims" {
  value = {
    for u in `+users+` : u => provider::jupyter::expand_template("claim-{username}", u, "", "safe")
  }
}
`),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownOutputValue("claims", knownvalue.MapExact(map[string]knownvalue.Check{
				"alice":           knownvalue.StringExact("claim-alice"),
				"Alice":           knownvalue.StringExact("claim-alice---3bc51062"),
				"user@email.com":  knownvalue.StringExact("claim-user-email-com---0925f997"),
				"9user@email.com": knownvalue.StringExact("claim-x-9user-email-com---08f58cbd"),
			})),
		},
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps:                    []resource.TestStep{fnStep(t, cases), mapStep},
	})
}

func TestAccFunctionExpandTemplate_errors(t *testing.T) {
	call := func(template, user, server, scheme string) string {
		return fnCall("expand_template", template, user, server, scheme)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			fnErrorStep(t, call("claim-{username}", "alice", "", "legacy"), `Invalid value for "slug_scheme" parameter: Unknown slug_scheme.*"legacy".*"safe".*"escape"`),
			fnErrorStep(t, call("claim-{username}", "alice", "", ""), `Invalid value for "slug_scheme" parameter: Unknown slug_scheme`),
			fnErrorStep(t, call("claim-{nope}", "alice", "", "safe"), `Invalid value for "template" parameter: Invalid template.*unknown field.*\{nope\}`),
			fnErrorStep(t, call("claim-{username", "alice", "", "safe"), `Invalid value for "template" parameter: Invalid template.*expected '\}'`),
			fnErrorStep(t, call("claim-}", "alice", "", "safe"), `Invalid value for "template" parameter: Invalid template.*Single '\}'`),
			fnErrorStep(t, call("claim-{", "alice", "", "safe"), `Invalid value for "template" parameter: Invalid template.*Single '\{'`),
			fnErrorStep(t, call("{username:d}", "alice", "", "safe"), `Invalid value for "template" parameter: .*Unknown format code 'd'`),
			fnErrorStep(t, call("{hubnamespace}-{username}", "alice", "", "safe"), `Invalid value for "template" parameter: Field \{hubnamespace\} cannot be rendered.*replace\(template, "\{hubnamespace\}"`),
		},
	})
}
