package kubespawner

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// checkPlainAgrees asserts that ExpandValues, which expands a plain
// template without the formatter, gives what the formatter gives: the same
// name, or an error of the same text.
func checkPlainAgrees(t *testing.T, template string, v Values, scheme Scheme) {
	t.Helper()
	got, err := ExpandValues(template, v, scheme)
	want, wantErr := expandWithFormatter(template, v, scheme)
	if got != want || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Errorf("ExpandValues(%q, %q, %q, %s) = %q, %v; the formatter gives %q, %v", template, v.Username, v.Servername, scheme, got, err, want, wantErr)
	}
}

// plainPieces are what the random templates are made of: every field a
// plain template may hold, fields and markup it may not, and literal text
// with hyphens (the trailing '-' rule) and non-ASCII.
var plainPieces = []string{
	"{username}", "{servername}", "{user_server}", "{safe_username}", "{safe_servername}", "{safe_user_server}",
	"{escaped_username}", "{escaped_servername}", "{escaped_user_server}", "{unescaped_username}", "{unescaped_servername}",
	"claim-", "jupyter-", "-", "--", "x", "É", "😀", " ", ".", "_",
	"{userid}", "{hubnamespace}", "{pod_name}", "{username!r}", "{username:>60}", "{username[0]}", "{ username}", "{Username}",
	"{}", "{0}", "{", "}", "{{", "}}", ":", "!", "[", "]", "{nope}",
}

// TestPlainTemplatesAgreeWithTheFormatter expands random templates for
// random names under both schemes with and without the formatter: the
// fast path must give the formatter's name, or leave the template to it.
func TestPlainTemplatesAgreeWithTheFormatter(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	names := append(usernameCorpus(300), "", "-", "a-", "-a", "ALICE--", strings.Repeat("y", 60))
	plain := 0
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(5) {
			b.WriteString(plainPieces[rng.IntN(len(plainPieces))])
		}
		template := b.String()
		if parsePlain(template) != nil {
			plain++
		}
		v := Values{Username: names[rng.IntN(len(names))]}
		if rng.IntN(2) == 0 {
			v.Servername = names[rng.IntN(len(names))]
		}
		if rng.IntN(2) == 0 { // the optional values given: they change no plain template
			v.UserID, v.HubNamespace, v.Namespace, v.PodName, v.PVCName = ptr(int64(rng.IntN(100))), ptr("default"), ptr("jhub"), ptr("jupyter-x"), ptr("claim-x")
		}
		for _, scheme := range append(Schemes(), "") { // "" is the default scheme
			checkPlainAgrees(t, template, v, scheme)
		}
	}
	if plain < 2000 || plain > 18000 {
		t.Errorf("%d of 20,000 random templates were plain: the test must try both paths often", plain)
	}
}

// TestPlainTemplates checks which templates take the fast path: the
// defaults and the usual home templates do; anything the formatter must
// interpret does not.
func TestPlainTemplates(t *testing.T) {
	for _, tmpl := range []string{DefaultPVCNameTemplate, DefaultPodNameTemplate, LegacyPVCNameTemplate, Z2JHLegacyPVCNameTemplate,
		"claim-{username}", "home-{escaped_username}", "{unescaped_username}-", "x", ""} {
		if parsePlain(tmpl) == nil {
			t.Errorf("%q is not plain", tmpl)
		}
	}
	for _, tmpl := range []string{DefaultUserNamespaceTemplate, "claim-{username!r}", "{username:>5}", "{username[0]}", "{{x}}", "a}}", "{ username}",
		"{username", "claim-{userid}", "{}", "{pvc_name}"} {
		if parsePlain(tmpl) != nil {
			t.Errorf("%q is plain", tmpl)
		}
	}
	p := parsePlain("claim-{username}--{servername}")
	if strings.Join(p.lits, "|") != "claim-|--|" || strings.Join(p.fields, "|") != "username|servername" {
		t.Errorf("parsePlain: %q %q", p.lits, p.fields)
	}
}
