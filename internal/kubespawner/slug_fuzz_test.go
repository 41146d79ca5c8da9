package kubespawner

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func containsLabelQuirk(s string) bool {
	for _, r := range s {
		if labelQuirkRunes[r] {
			return true
		}
	}
	return false
}

// checkNames asserts the invariants of the safe scheme for one user
// server, and returns the derived names for determinism checks.
func checkNames(t *testing.T, username, servername string) []string {
	t.Helper()
	var out []string
	for _, name := range []string{username, servername} {
		for _, maxLen := range []int{0, TemplateMaxLength} {
			s, err := SafeSlug(name, nil, maxLen)
			if err != nil {
				t.Fatalf("SafeSlug(%q, %d): %v", name, maxLen, err)
			}
			limit := MaxNameLength
			if maxLen > 0 {
				limit = maxLen
			}
			if s != name {
				limit = DefaultHashedLength
				if maxLen > 0 {
					limit = maxLen
				}
				if !strings.Contains(s, "---") {
					t.Errorf("SafeSlug(%q, %d) = %q: hashed without ---", name, maxLen, s)
				}
			}
			if !IsValidObjectName(s) || len(s) > limit {
				t.Errorf("SafeSlug(%q, %d) = %q: not a valid name of at most %d", name, maxLen, s, limit)
			}
			out = append(out, s)
		}
		label, err := SafeSlug(name, IsValidLabel, 0)
		if err != nil {
			t.Fatalf("label %q: %v", name, err)
		}
		if !IsValidLabel(label) {
			t.Errorf("label for %q = %q fails IsValidLabel", name, label)
		}
		// Kubernetes-valid unless upstream's quirk let the name through.
		if !IsValidLabelValue(label) && (label != name || !containsLabelQuirk(name)) {
			t.Errorf("label for %q = %q is not a valid label value", name, label)
		}
		esc := EscapeSlug(name)
		if strings.Trim(esc, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			t.Errorf("EscapeSlug(%q) = %q has other characters", name, esc)
		}
		out = append(out, label, esc)
	}
	uf, err := ComputeUserFields(username, servername)
	if err != nil {
		t.Fatalf("ComputeUserFields(%q, %q): %v", username, servername, err)
	}
	for _, s := range []string{uf.SafeUsername, uf.SafeUserServer} {
		if !IsValidObjectName(s) || len(s) > TemplateMaxLength {
			t.Errorf("template field %q for (%q, %q) is not a valid name of at most 48", s, username, servername)
		}
	}
	if servername != "" && (!IsValidObjectName(uf.SafeServername) || len(uf.SafeServername) > TemplateMaxLength) {
		t.Errorf("{servername} %q for %q is not a valid name of at most 48", uf.SafeServername, servername)
	}
	for _, tmpl := range []string{DefaultPodNameTemplate, DefaultPVCNameTemplate} {
		s, err := Expand(tmpl, username, servername, SchemeSafe)
		if err != nil {
			t.Fatalf("Expand(%q): %v", tmpl, err)
		}
		if !IsValidObjectName(s) {
			t.Errorf("Expand(%q, %q, %q) = %q: not a valid name", tmpl, username, servername, s)
		}
		out = append(out, s)
	}
	if m, err := MultiSlug([]string{username, servername}, TemplateMaxLength); err != nil || !IsValidObjectName(m) || len(m) > TemplateMaxLength {
		t.Errorf("MultiSlug(%q, %q) = %q, %v", username, servername, m, err)
	}
	out = append(out, fmt.Sprint(uf))
	return out
}

func FuzzNames(f *testing.F) {
	seeds := [][3]string{
		{"alice", "", DefaultPVCNameTemplate},
		{"Alice", "My Server", LegacyPVCNameTemplate},
		{"user@email.com", "Some Name", "{user_server:>{userid}}"},
		{"9user", "--", "{unescaped_username!r}-"},
		{"İsmail", "\u212a", "{username[0]}{{x}}"},
		{"a\u212ab", "ſ", "{escaped_user_server}"},
		{strings.Repeat("x", 47), "", "{safe_user_server:*^60}"},
		{"111111111111111111-a", "ΑΣ", "{userid:#010x}"},
		{"", "", "{"},
		{"😀 emoji", "\n", "}}{servername!a:.3}"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, username, servername, template string) {
		if !utf8.ValidString(username) || !utf8.ValidString(servername) {
			if _, err := Expand("x", username, servername, SchemeSafe); err == nil {
				t.Errorf("invalid UTF-8 accepted: %q %q", username, servername)
			}
			return
		}
		first := checkNames(t, username, servername)
		second := checkNames(t, username, servername)
		if strings.Join(first, "\x00") != strings.Join(second, "\x00") {
			t.Errorf("not deterministic for (%q, %q)", username, servername)
		}

		// Arbitrary templates: no panic, deterministic, and a template
		// that ValidateTemplate rejects never expands.
		v := Values{
			Username: username, Servername: servername,
			UserID: ptr(int64(len(username))), HubNamespace: ptr("default"),
			Namespace: ptr("jhub"), PodName: ptr("jupyter-x"), PVCName: ptr("claim-x"),
		}
		for _, scheme := range Schemes() {
			a, errA := ExpandValues(template, v, scheme)
			b, errB := ExpandValues(template, v, scheme)
			if a != b || (errA == nil) != (errB == nil) {
				t.Errorf("ExpandValues(%q) not deterministic", template)
			}
			checkPlainAgrees(t, template, v, scheme)
			checkPlainAgrees(t, template, Values{Username: username, Servername: servername}, scheme)
			if verr := ValidateTemplate(template); verr != nil && errA == nil {
				t.Errorf("ValidateTemplate(%q) = %v but it expands to %q", template, verr, a)
			}
		}
	})
}

// usernameCorpus returns n distinct usernames of many shapes: plain, mixed
// case, digits first, emails, unicode, separators, long.
func usernameCorpus(n int) []string {
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"alice", "bob", "Carol", "dave", "ERIN", "frank", "zoë", "İsmail", "Σίσυφος", "José", "mañana", "müller", "李雷", "kelvin", "o'brien", "jean-luc", "x"}
	domains := []string{"example.com", "Example.COM", "uni.edu", "mail.co.uk", "x.io"}
	seps := []string{"", ".", "-", "_", "--", "+", " ", "@"}
	randWord := func() string {
		w := words[rng.IntN(len(words))]
		switch rng.IntN(4) {
		case 0:
			w = strings.ToUpper(w[:1]) + w[1:]
		case 1:
			w = strings.ToUpper(w)
		}
		return w
	}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var s string
		switch rng.IntN(7) {
		case 0:
			s = randWord() + fmt.Sprint(rng.IntN(1000))
		case 1:
			s = randWord() + seps[rng.IntN(len(seps))] + randWord() + "@" + domains[rng.IntN(len(domains))]
		case 2:
			s = fmt.Sprint(rng.IntN(100)) + randWord()
		case 3:
			var b strings.Builder
			for b.Len() < 48+rng.IntN(60) {
				b.WriteString(randWord())
				b.WriteString(seps[rng.IntN(len(seps))])
			}
			s = b.String()
		case 4:
			s = randWord() + seps[rng.IntN(len(seps))] + randWord()
		case 5:
			// Names that differ only in characters the slug drops.
			s = "user" + strings.Repeat("é", rng.IntN(5)) + strings.Repeat(".", rng.IntN(3)) + fmt.Sprint(rng.IntN(50))
		default:
			rs := make([]rune, 1+rng.IntN(20))
			for i := range rs {
				rs[i] = rune(0x20 + rng.IntN(0x3000))
			}
			s = string(rs)
		}
		if !utf8.ValidString(s) || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// Distinct usernames must map to distinct names under every safe-scheme
// derivation: {username} (max 48), safe_slug without max length, the
// default PVC name, and {user_server} for a named server.
func TestSafeNamesNoCollisions(t *testing.T) {
	corpus := usernameCorpus(5000)
	derive := map[string]func(string) (string, error){
		"safe_slug": func(u string) (string, error) { return SafeSlug(u, nil, 0) },
		"username":  func(u string) (string, error) { return Expand("{username}", u, "", SchemeSafe) },
		"pvc":       func(u string) (string, error) { return Expand(DefaultPVCNameTemplate, u, "", SchemeSafe) },
		"named":     func(u string) (string, error) { return Expand("{user_server}", u, "gpu", SchemeSafe) },
		"label":     UsernameLabel,
	}
	for what, fn := range derive {
		seen := make(map[string]string, len(corpus))
		for _, u := range corpus {
			s, err := fn(u)
			if err != nil {
				t.Fatalf("%s(%q): %v", what, u, err)
			}
			if prev, ok := seen[s]; ok {
				t.Errorf("%s: %q and %q both map to %q", what, prev, u, s)
			}
			seen[s] = u
		}
	}
}

// The legacy escape scheme is not injective: hex digits are not padded, so
// a control character below 0x10 followed by hex-digit text can spell
// another byte. KubeSpawner <= 6 had the same collision.
func TestEscapeSlugCollision(t *testing.T) {
	a, b := EscapeSlug("\x02c2"), EscapeSlug(",2")
	if a != "-2c2" || a != b {
		t.Errorf("EscapeSlug collision changed: %q vs %q", a, b)
	}
}
