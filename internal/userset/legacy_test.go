package userset

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestParseLegacy(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"none", `{}`, nil},
		{"jsonencode", `{"alice":"claim-alice","bob":"claim-bob,data-bob"}`, []string{"alice", "bob"}},
		{"unsorted, spaces", "{ \"bob\": \"claim-bob\",\n \"alice\": \"\" }", []string{"alice", "bob"}},
		{"escapes jsonencode writes", `{"a\u003cb\u0026c":"claim-a-3cb-26c"}`, []string{"a<b&c"}},
		{"decomposed becomes NFC", `{"zoe\u0308@example.org":"claim-zo-c3-abexample-2eorg"}`, []string{"zo\u00eb@example.org"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLegacy(tc.in)
			if err != nil {
				t.Fatalf("ParseLegacy(%q): %v", tc.in, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ParseLegacy(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseLegacyRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", `alice,bob`, "is not JSON"},
		{"empty string", ``, "is not JSON"},
		{"array", `["alice","bob"]`, `is a JSON array; it must be a JSON object from each username to a string`},
		{"string", `"alice"`, `is the JSON value the string "alice"; it must be a JSON object from each username to a string`},
		{"null", `null`, "is the JSON value null"},
		{"users form", `{"alice":{}}`, `maps "alice" to an object; each username maps to a string (its claim names`},
		{"value an array", `{"alice":["claim-alice"]}`, `maps "alice" to an array`},
		{"value a number", `{"alice":1}`, `maps "alice" to 1`},
		{"value null", `{"alice":null}`, `maps "alice" to null`},
		{"value a bool", `{"alice":true}`, `maps "alice" to true`},
		{"empty username", `{"alice":"claim-alice","":"claim-"}`, `has the username ""`},
		{"repeated", `{"alice":"a","alice":"b"}`, `lists the username "alice" twice; list each user once`},
		{"repeated in NFC", `{"\u00e9":"a","e\u0301":"b"}`, `lists the username "é" twice, as "\u00e9" and as "e\u0301"`},
		{"lone surrogate", `{"a\ud800":"a"}`, "U+FFFD"},
		{"truncated", `{"alice":"claim-alice"`, "is not valid JSON (it ends too early)"},
		{"trailing", `{"alice":"a"} {"bob":"b"}`, "has more after its JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLegacy(tc.in)
			if err == nil {
				t.Fatalf("ParseLegacy(%q) = %q, want an error containing %q", tc.in, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseLegacy(%q): %v, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestEncodeLegacy: compact, keys sorted, escaped as jsonencode escapes,
// {} when empty, and read back by ParseLegacy and by the JSON decoder as
// the same content.
func TestEncodeLegacy(t *testing.T) {
	claims := map[string]string{"zed": "claim-zed", "a<b": "claim-a-3cb", "alice": "claim-alice,data-alice"}
	got := EncodeLegacy(claims)
	if want := `{"a\u003cb":"claim-a-3cb","alice":"claim-alice,data-alice","zed":"claim-zed"}`; got != want {
		t.Fatalf("EncodeLegacy = %s, want %s", got, want)
	}
	names, err := ParseLegacy(got)
	if err != nil || !slices.Equal(names, slices.Sorted(maps.Keys(claims))) {
		t.Fatalf("ParseLegacy(EncodeLegacy) = %q, %v", names, err)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(got), &back); err != nil || !maps.Equal(back, claims) {
		t.Fatalf("decoded %v, %v; want %v", back, err, claims)
	}
	for _, empty := range []map[string]string{nil, {}} {
		if s := EncodeLegacy(empty); s != "{}" {
			t.Fatalf("EncodeLegacy(%v) = %s, want {}", empty, s)
		}
	}
}

// TestLegacyCanonicalAgreesWithDecoder: over random legacy_users values,
// the fast path reads exactly what the JSON decoder reads, and leaves to
// it what it cannot read that way (escapes in a claim name, a raw control
// character, a value that is not a string).
func TestLegacyCanonicalAgreesWithDecoder(t *testing.T) {
	agreesWithDecoder(t, legacyReader, randomLegacy, 16)
}

var legacyReader = reader{"ParseLegacy", func(s string) ([]string, bool) { return parseCanonicalObject(s, plainString) },
	func(s string) ([]string, error) { return parseObject(s, legacyForm) }, ParseLegacy}

// FuzzParseLegacy: whatever the input, the fast path agrees with the
// decoder, and every name read is non-empty, in NFC and listed once.
func FuzzParseLegacy(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"x","b":"y"}`, `{"b":"x","a":"y"}`, `{"a":"x","a":"x"}`, `{"a":"x\"y"}`, `{"a":{}}`, `{"":"x"}`, `["a"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { readsConsistently(t, legacyReader, s) })
}

// randomLegacy is a legacy_users value: a random users value (see
// randomUsers) with each {} replaced by a claim-names value, mostly a plain
// string.
func randomLegacy(r *rand.Rand) string {
	values := []string{`"claim-a"`, `"claim-a,data-a"`, `""`, `"claim-\u003c"`, `"a\"b"`, "\"tab\t\"", `{}`, `1`, `null`, `"é"`}
	s := randomUsers(r)
	var b strings.Builder
	for {
		before, after, found := strings.Cut(s, ":{}")
		b.WriteString(before)
		if !found {
			break
		}
		v := values[0]
		if r.IntN(3) == 0 {
			v = values[r.IntN(len(values))]
		}
		b.WriteString(":" + v)
		s = after
	}
	return b.String()
}

// BenchmarkParseLegacy is legacy_users with 20,000 e-mail-like names, as
// jupyter_home_storage writes it after a flip to ReadWriteMany.
func BenchmarkParseLegacy(b *testing.B) {
	claims := make(map[string]string, 20000)
	for i := range 20000 {
		claims[fmt.Sprintf("firstname.lastname%05d@university.example.edu", i)] = fmt.Sprintf("claim-firstname-2elastname%05d-40university-2eexample-2eedu", i)
	}
	s := EncodeLegacy(claims)
	b.Run("canonical", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseCanonicalObject(s, plainString); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseObject(s, legacyForm); err != nil {
				b.Fatal(err)
			}
		}
	})
}
