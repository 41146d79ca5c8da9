package kubespawner

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// Naming cases of jupyterhub/kubespawner tests/test_spawner.py (safe scheme
// and default templates unless the case says otherwise).
var upstreamSpawnerCases = []struct {
	test, template, user, server string
	scheme                       Scheme
	want                         string
}{
	{"test_pod_name_no_named_servers", DefaultPodNameTemplate, "user", "", SchemeSafe, "jupyter-user"},
	{"test_pod_name_named_servers", DefaultPodNameTemplate, "user", "server", SchemeSafe, "jupyter-user--server"},
	{"test_pod_name_escaping", DefaultPodNameTemplate, "some_user", "test-server!", SchemeSafe, "jupyter-some-user---7d3a4d4e--test-server---cb54a9af"},
	{"test_pod_name_custom_template", "prefix-{user_server}-suffix", "some_user", "", SchemeSafe, "prefix-some-user---7d3a4d4e-suffix"},
	{"test_pod_name_collision pod 1", DefaultPodNameTemplate, "user-has-dash", "", SchemeSafe, "jupyter-user-has-dash"},
	{"test_pod_name_collision pvc 1", DefaultPVCNameTemplate, "user-has-dash", "", SchemeSafe, "claim-user-has-dash"},
	{"test_pod_name_collision pod 2", DefaultPodNameTemplate, "user-has", "dash", SchemeSafe, "jupyter-user-has--dash"},
	{"test_pod_name_collision pvc 2", DefaultPVCNameTemplate, "user-has", "dash", SchemeSafe, "claim-user-has--dash"},
	// test_pod_connect_ip / test_url_changed: pod_connect_ip
	// "jupyter-{username}--{servername}.foo.example.com" is split on '.'
	// and each part holding '{' is expanded on its own, so the first part
	// is the template here; the tests expect jupyter-connectip.foo...,
	// jupyter-connectip--server.foo... and jupyter-url.foo....
	{"test_pod_connect_ip default", "jupyter-{username}--{servername}", "connectip", "", SchemeSafe, "jupyter-connectip"},
	{"test_pod_connect_ip named", "jupyter-{username}--{servername}", "connectip", "server", SchemeSafe, "jupyter-connectip--server"},
	{"test_url_changed", "jupyter-{username}--{servername}", "url", "", SchemeSafe, "jupyter-url"},
	// test_get_pvc_manifest: pvc_name_template "user-{username}" is
	// "user-" + safe_slug("mock@name"); the value is computed with upstream.
	{"test_get_pvc_manifest", "user-{username}", "mock@name", "", SchemeSafe, "user-mock-name---6241db84"},
	{"test_get_pvc_manifest labels", "{username}", "mock@name", "", SchemeSafe, "mock-name---6241db84"},
	// test_spawner_env
	{"test_spawner_env EXPANDED", "{username} (expanded)", "mock@name", "", SchemeSafe, "mock-name---6241db84 (expanded)"},
	{"test_spawner_env ESCAPED", "{{username}}", "mock@name", "", SchemeSafe, "{username}"},
	{"test_jupyterhub_supplied_env", "It's {unescaped_username}", "mock@name", "", SchemeSafe, "It's mock@name"},
	// test_expansion_hyphens: each list entry is a template.
	{"test_expansion_hyphens --", "--", "mock@name", "", SchemeSafe, "--"},
	{"test_expansion_hyphens raw", "{unescaped_username}", "mock@name", "", SchemeSafe, "mock@name"},
	{"test_expansion_hyphens raw-", "{unescaped_username}-", "mock@name", "", SchemeSafe, "mock@name-"},
	{"test_expansion_hyphens -x", "-x", "mock@name", "", SchemeSafe, "-x"},
	// test_variable_expansion (user1)
	{"test_variable_expansion pod", "pod-name-template-{username}", "user1", "", SchemeSafe, "pod-name-template-user1"},
	{"test_variable_expansion pvc", "pvc-name-template-{username}", "user1", "", SchemeSafe, "pvc-name-template-user1"},
	{"test_variable_expansion VAR4", "VAR4-{{username}}-{{SHELL}}", "user1", "", SchemeSafe, "VAR4-{username}-{SHELL}"},
	// test_spawn_start_upgrade_pvc_name: the escape-scheme name under the
	// old template, and the new safe name; they differ.
	{"test_spawn_start_upgrade_pvc_name old", LegacyPVCNameTemplate, "needs-Escape", "server", SchemeEscape, "claim-needs-2d-45scape--server"},
	{"test_spawn_start_upgrade_pvc_name new", DefaultPVCNameTemplate, "needs-Escape", "server", SchemeSafe, "claim-needs-escape---716ef4ab--server"},
	// test_spawn_enable_user_namespaces: the MockUser name.
	{"test_spawn_enable_user_namespaces", "{username}", "9user@email.com", "", SchemeSafe, "x-9user-email-com---08f58cbd"},
}

func TestExpandUpstreamSpawner(t *testing.T) {
	for _, tc := range upstreamSpawnerCases {
		got, err := Expand(tc.template, tc.user, tc.server, tc.scheme)
		if err != nil || got != tc.want {
			t.Errorf("%s: Expand(%q, %q, %q, %s) = %q, %v; want %q", tc.test, tc.template, tc.user, tc.server, tc.scheme, got, err, tc.want)
		}
	}
	// test_pod_name_collision: the two servers must not collide.
	a, _ := Expand(DefaultPVCNameTemplate, "user-has-dash", "", SchemeSafe)
	b, _ := Expand(DefaultPVCNameTemplate, "user-has", "dash", SchemeSafe)
	if a == b {
		t.Errorf("collision: %q", a)
	}
}

// The intro table of docs/source/templates.md lists pod names for the
// default pod_name_template. Its third row ("user@email.com" / "Some Name"
// -> jupyter-user-email-com--some-name---0c1fe94b) is the multi_slug value,
// but the code only uses multi_slug when the two safe names joined by "--"
// exceed 48 characters (25 + 2 + 20 = 47 here), so KubeSpawner itself
// produces the two-hash name below, as test_pod_name_escaping does for a
// similar pair.
func TestExpandDocsIntroTable(t *testing.T) {
	for _, tc := range []struct{ user, server, want string }{
		{"user", "", "jupyter-user"},
		{"user", "server", "jupyter-user--server"},
		{"user@email.com", "Some Name", "jupyter-user-email-com---0925f997--some-name---3a8b1764"},
	} {
		got, err := Expand(DefaultPodNameTemplate, tc.user, tc.server, SchemeSafe)
		if err != nil || got != tc.want {
			t.Errorf("Expand(pod, %q, %q) = %q, %v; want %q", tc.user, tc.server, got, err, tc.want)
		}
	}
}

func TestExpandSchemes(t *testing.T) {
	for _, tc := range []struct {
		template, user, server string
		scheme                 Scheme
		want                   string
	}{
		// Upstream issue logs (zero-to-jupyterhub-k8s #3536, #3574).
		{DefaultPVCNameTemplate, "abc000@uit.no", "", SchemeEscape, "claim-abc000-40uit-2eno"},
		{DefaultPVCNameTemplate, "test@example.org", "named", SchemeEscape, "claim-test-40example-2eorg--named"},
		{Z2JHLegacyPVCNameTemplate, "test@example.org", "named", SchemeEscape, "claim-test-40example-2eorgnamed"},
		{LegacyPVCNameTemplate, "user", "", SchemeEscape, "claim-user"},
		// The empty scheme is the default (safe).
		{"{username}", "Alice", "", "", "alice---3bc51062"},
		// Explicit prefixes ignore the scheme.
		{"{escaped_username}/{safe_username}/{unescaped_username}", "Alice", "", SchemeSafe, "-41lice/alice---3bc51062/Alice"},
		{"{escaped_username}/{safe_username}/{unescaped_username}", "Alice", "", SchemeEscape, "-41lice/alice---3bc51062/Alice"},
		// {escaped_user_server} keeps its "--" inside a template; only the
		// end of the whole result is stripped.
		{"{escaped_user_server}-suffix", "user", "", SchemeSafe, "user---suffix"},
		{"{escaped_user_server}", "user", "", SchemeSafe, "user"},
		{"{user_server}", "user", "", SchemeEscape, "user"},
		{"{user_server}", "user", "srv", SchemeEscape, "user--srv"},
		// The +2 rule: a 47-character valid username on the default server
		// gets a multi_slug {user_server}; {username} is unchanged.
		{"{user_server}", strings.Repeat("x", 47), "", SchemeSafe, "xxxxxxxxxxxxxxxxx--x---cfcbdd85"},
		{"{user_server}", strings.Repeat("x", 48), "", SchemeSafe, "xxxxxxxxxxxxxxxxx--x---e13c8ee2"},
		{"{username}", strings.Repeat("x", 47), "", SchemeSafe, strings.Repeat("x", 47)},
		{"{user_server}", strings.Repeat("a", 46), "", SchemeSafe, strings.Repeat("a", 46)},
		{DefaultPodNameTemplate, "a-very-long-name-that-is-too-long-for-sixty-four-character-labels", "and-a-long-server-name-too", SchemeSafe, "jupyter-a-very-long-name--and-a-long-server---35f2bf74"},
	} {
		got, err := Expand(tc.template, tc.user, tc.server, tc.scheme)
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q, %q, %q, %q) = %q, %v; want %q", tc.template, tc.user, tc.server, tc.scheme, got, err, tc.want)
		}
	}
}

// str.format behaviour; every expected value was produced by CPython
// running KubeSpawner's _expand_user_properties logic with username
// "Zoë@x", the default server and the given user id.
func TestExpandFormatting(t *testing.T) {
	for _, tc := range []struct {
		template string
		userID   int64
		want     string
	}{
		{"{{username}}", 42, "{username}"},
		{"VAR4-{{username}}-{{SHELL}}", 42, "VAR4-{username}-{SHELL}"},
		{"{username:>20}", 42, "     zo-x---df0ee38c"},
		{"{username:*^19}", 42, "**zo-x---df0ee38c**"},
		{"{username:.3}", 42, "zo"},
		{"{username:<8.2}|", 42, "zo      |"},
		{"{username!r}", 42, "'zo-x---df0ee38c'"},
		{"{unescaped_username!r}", 42, "'Zoë@x'"},
		{"{unescaped_username!a}", 42, "'Zo\\xeb@x'"},
		{"{unescaped_username!s:.4}", 42, "Zoë@"},
		{"{username[0]}", 42, "z"},
		{"{unescaped_username[2]}", 42, "ë"},
		{"{userid}", 42, "42"},
		{"{userid:05}", 42, "00042"},
		{"{userid:+d}", 42, "+42"},
		{"{userid:#x}", 255, "0xff"},
		{"{userid:#X}", 255, "0XFF"},
		{"{userid:_b}", 1234567, "1_0010_1101_0110_1000_0111"},
		{"{userid:08,}", 1234567, "1,234,567"},
		{"{userid:010,}", 1234, "00,001,234"},
		{"{userid:>{userid}}|", 5, "    5|"},
		{"{unescaped_username:{userid}}|", 8, "Zoë@x   |"},
		{"{userid!r:>5}", 42, "   42"},
		{"{userid: }", 42, " 42"},
		{"{userid:x<6}", 42, "42xxxx"},
		{"{userid:^7}", 42, "  42   "},
		{"{userid:0=9,}", 1234567, "1,234,567"},
		{"{username:05}", 42, "zo-x---df0ee38c"},
		{"{userid:+08}", -42, "-0000042"},
		{"{userid:#o}", 8, "0o10"},
		{"{userid:=+6}", 42, "+   42"},
		{"{userid:#010b}", 5, "0b00000101"},
		{"{username}-", 42, "zo-x---df0ee38c-"},
		{"{username}--", 42, "zo-x---df0ee38c--"},
		{"a{username}-b", 42, "azo-x---df0ee38c-b"},
		{"{servername}-{username}--", 42, "-zo-x---df0ee38c--"},
	} {
		got, err := ExpandValues(tc.template, Values{Username: "Zoë@x", UserID: ptr(tc.userID)}, SchemeSafe)
		if err != nil || got != tc.want {
			t.Errorf("ExpandValues(%q, userid %d) = %q, %v; want %q", tc.template, tc.userID, got, err, tc.want)
		}
	}
}

func TestExpandOptionalValues(t *testing.T) {
	v := Values{
		Username:     "alice",
		Servername:   "gpu",
		UserID:       ptr(int64(7)),
		HubNamespace: ptr("default"),
		Namespace:    ptr("jhub"),
		PodName:      ptr("jupyter-alice--gpu"),
		PVCName:      ptr("claim-alice"),
	}
	got, err := ExpandValues("{userid}/{hubnamespace}/{namespace}/{pod_name}/{pvc_name}", v, SchemeSafe)
	if want := "7/user/jhub/jupyter-alice--gpu/claim-alice"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	v.HubNamespace = ptr("hub")
	if got, _ := ExpandValues("{hubnamespace}-{username}", v, SchemeSafe); got != "hub-alice" {
		t.Errorf("user namespace = %q", got)
	}
	for _, field := range []string{"userid", "hubnamespace", "namespace", "pod_name", "pvc_name"} {
		_, err := Expand("x-{"+field+"}", "alice", "", SchemeSafe)
		var te *TemplateError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "{"+field+"}") || !strings.Contains(err.Error(), "not given") {
			t.Errorf("Expand with {%s} and no value: error %v", field, err)
		}
	}
}

func TestResolveNames(t *testing.T) {
	pod, pvc, err := ResolveNames(Values{Username: "alice", Servername: "gpu"}, DefaultPodNameTemplate, DefaultPVCNameTemplate, SchemeSafe)
	if err != nil || pod != "jupyter-alice--gpu" || pvc != "claim-alice--gpu" {
		t.Errorf("ResolveNames = %q, %q, %v", pod, pvc, err)
	}
	pod, pvc, err = ResolveNames(Values{Username: "alice"}, "{pvc_name}-{pod_name}", "{pod_name}-data-{pvc_name}", SchemeSafe)
	if err != nil || pod != "pvc_name_unavailable!-pod_name_unavailable!" ||
		pvc != "pvc_name_unavailable!-pod_name_unavailable!-data-pvc_name_unavailable!" {
		t.Errorf("ResolveNames = %q, %q, %v", pod, pvc, err)
	}
	if _, _, err := ResolveNames(Values{Username: "alice"}, "{namespace}", DefaultPVCNameTemplate, SchemeSafe); err == nil {
		t.Error("ResolveNames with {namespace} and no namespace: want an error")
	}
}

// Template errors; the Python error named in each case is what CPython's
// str.format raises for the same template.
var badTemplates = []struct {
	template string
	mention  string // must appear in the error message
}{
	{"claim-{bogus}", "{bogus}"},                         // KeyError
	{"claim-{Username}", "{Username}"},                   // KeyError
	{"claim-{username", "{username"},                     // expected '}' before end of string
	{"claim-}", "Single '}'"},                            // Single '}' encountered
	{"claim-{", "Single '{'"},                            // Single '{' encountered
	{"{}", "positional"},                                 // IndexError
	{"{0}", "positional"},                                // IndexError
	{"{username{", "unexpected '{'"},                     // unexpected '{' in field name
	{"{username!}", "unmatched '{'"},                     // unmatched '{' in format spec
	{"{username!x}", "Unknown conversion specifier x"},   // ValueError
	{"{username!", "conversion specifier"},               // end of string while looking ...
	{"{username!sx}", "expected ':'"},                    // expected ':' after conversion
	{"{username:d}", "Unknown format code 'd'"},          // ValueError
	{"{username:+}", "Sign not allowed"},                 // ValueError
	{"{username:=5}", "'=' alignment"},                   // ValueError
	{"{username:abc}", "Invalid format specifier 'abc'"}, // ValueError
	{"{username:,}", "Cannot specify ','"},               // ValueError
	{"{username:.}", "missing precision"},                // ValueError
	{"{userid:.2}", "Precision not allowed"},             // ValueError
	{"{userid:,x}", "Cannot specify ','"},                // ValueError
	{"{userid:,_}", "Cannot specify both"},               // ValueError
	{"{userid[0]}", "not subscriptable"},                 // TypeError
	{"{username[a]}", "string indices must be integers"}, // TypeError
	{"{username[0}", "expected '}'"},                     // expected '}' before end of string
	{"{username[0]x}", "Only '.' or '['"},                // ValueError
	{"{username[]}", "Empty attribute"},                  // ValueError
	{"{username.}", "Empty attribute"},                   // ValueError
	{"{username:{servername:{userid}}}", "recursion"},    // Max string recursion exceeded
	{"{username.upper}", "attribute access"},             // not reproducible (bound method repr)
	{"{userid:f}", "not supported"},                      // float formatting: not reproduced
	{"{username:99999999}", "not supported"},             // huge width: refused
}

func TestTemplateErrors(t *testing.T) {
	vals := Values{Username: "alice", UserID: ptr(int64(1))}
	for _, tc := range badTemplates {
		_, err := ExpandValues(tc.template, vals, SchemeSafe)
		var te *TemplateError
		if !errors.As(err, &te) {
			t.Errorf("ExpandValues(%q): error %v; want a *TemplateError", tc.template, err)
			continue
		}
		if te.Template != tc.template || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ExpandValues(%q): error %q; want it to mention %q", tc.template, err, tc.mention)
		}
		if verr := ValidateTemplate(tc.template); verr == nil {
			t.Errorf("ValidateTemplate(%q) = nil; want an error", tc.template)
		}
	}
	// An index past the end depends on the value: expansion fails,
	// validation cannot tell.
	if _, err := Expand("{username[9]}", "alice", "", SchemeSafe); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("index out of range: %v", err)
	}
	if err := ValidateTemplate("{username[9]}"); err != nil {
		t.Errorf("ValidateTemplate({username[9]}) = %v", err)
	}
	if _, err := Expand("x", "bad\xff", "", SchemeSafe); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8 username: %v", err)
	}
	if _, err := Expand("x", "alice", "", Scheme("nope")); err == nil || !strings.Contains(err.Error(), `"safe", "escape"`) {
		t.Errorf("bad scheme: %v", err)
	}
}

func TestValidateTemplate(t *testing.T) {
	for _, tmpl := range []string{
		"", "plain", DefaultPodNameTemplate, DefaultPVCNameTemplate, LegacyPVCNameTemplate,
		Z2JHLegacyPVCNameTemplate, DefaultUserNamespaceTemplate, "{{literal}}", "{username:>{userid}}",
		"{userid:05}/{hubnamespace}/{namespace}/{pod_name}/{pvc_name}", "{unescaped_username!r}",
		"{safe_user_server}-{escaped_user_server}-{safe_servername}-{escaped_servername}-{unescaped_servername}",
	} {
		if err := ValidateTemplate(tmpl); err != nil {
			t.Errorf("ValidateTemplate(%q) = %v", tmpl, err)
		}
	}
	err := ValidateTemplate("claim-{user}")
	if err == nil || !strings.Contains(err.Error(), "{user}") || !strings.Contains(err.Error(), "{user_server}") {
		t.Errorf("unknown field error should name the field and list known ones: %v", err)
	}
}

func TestFieldNames(t *testing.T) {
	want := []string{
		"escaped_servername", "escaped_user_server", "escaped_username", "hubnamespace",
		"namespace", "pod_name", "pvc_name", "safe_servername", "safe_user_server",
		"safe_username", "servername", "unescaped_servername", "unescaped_username",
		"user_server", "userid", "username",
	}
	if got := FieldNames(); !reflect.DeepEqual(got, want) {
		t.Errorf("FieldNames() = %q", got)
	}
	// Every field renders with full values.
	v := Values{Username: "u", Servername: "s", UserID: ptr(int64(1)), HubNamespace: ptr("h"), Namespace: ptr("n"), PodName: ptr("p"), PVCName: ptr("c")}
	for _, f := range want {
		if _, err := ExpandValues("{"+f+"}", v, SchemeSafe); err != nil {
			t.Errorf("field %s: %v", f, err)
		}
	}
}

func TestParseScheme(t *testing.T) {
	for _, s := range []string{"safe", "escape"} {
		if got, err := ParseScheme(s); err != nil || string(got) != s {
			t.Errorf("ParseScheme(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Safe", "legacy"} {
		_, err := ParseScheme(s)
		if err == nil || !strings.Contains(err.Error(), `"safe", "escape"`) {
			t.Errorf("ParseScheme(%q) error = %v", s, err)
		}
	}
}

func TestComputeUserFields(t *testing.T) {
	got, err := ComputeUserFields("Alice", "")
	want := UserFields{
		SafeUsername:      "alice---3bc51062",
		SafeUserServer:    "alice---3bc51062",
		EscapedUsername:   "-41lice",
		EscapedUserServer: "-41lice--",
	}
	if err != nil || got != want {
		t.Errorf("ComputeUserFields = %+v, %v", got, err)
	}
}
