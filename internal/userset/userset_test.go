package userset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"empty", `{}`, []string{}},
		{"jsonencode", `{"alice":{},"bob":{}}`, []string{"alice", "bob"}},
		{"spaces and newlines", "{\n  \"bob\": {},\n  \"alice\": { }\n}\n", []string{"alice", "bob"}},
		{"unsorted", `{"bob":{},"alice":{}}`, []string{"alice", "bob"}},
		{"escapes jsonencode writes", `{"a\u003cb\u0026c":{}}`, []string{"a<b&c"}},
		{"e-mail and unicode", `{"jörg@uni.example":{},"user@example.com":{}}`, []string{"jörg@uni.example", "user@example.com"}},
		{"decomposed becomes NFC", `{"e\u0301":{}}`, []string{"\u00e9"}},
		{"quote and backslash", `{"a\"b":{},"c\\d":{}}`, []string{`a"b`, `c\d`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// The shapes a users file has (a final newline, indented by jq or an
// editor, names in any order) take the fast path: at many users the
// decoder costs a plan time at each reading (BenchmarkParse; DESIGN.md's
// Cost at scale), and a plan reads users several times.
func TestFileShapesTakeTheFastPath(t *testing.T) {
	for _, s := range []string{
		"{\"alice\":{},\"bob\":{}}\n",
		"{\n  \"bob\": {},\n  \"alice\": {}\n}\n",
		"{ \"bob\" : { } , \"alice\" : {} }",
		"\r\n{}\r\n",
	} {
		got, ok := parseCanonical(s)
		want, err := parseJSON(s)
		if !ok || err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: fast path %q %v, decoder %q %v", s, got, ok, want, err)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", `alice,bob`, "is not JSON"},
		{"empty string", ``, "is not JSON"},
		{"array", `["alice","bob"]`, "is a JSON array"},
		{"string", `"alice"`, `is the JSON value the string "alice"`},
		{"null", `null`, "is the JSON value null"},
		{"value not an object", `{"alice":true}`, `maps "alice" to true`},
		{"value an array", `{"alice":[]}`, `maps "alice" to an array`},
		{"value with attributes", `{"alice":{"mode":"rwx"}}`, `maps "alice" to an object with attributes`},
		{"empty username", `{"alice":{},"":{}}`, `has the username ""`},
		{"repeated", `{"alice":{},"alice":{}}`, `lists the username "alice" twice; list each user once`},
		{"repeated in NFC", `{"\u00e9":{},"e\u0301":{}}`, `lists the username "é" twice, as "\u00e9" and as "e\u0301"`},
		{"lone surrogate", `{"a\ud800":{}}`, "U+FFFD"},
		{"invalid UTF-8", "{\"a\xff\":{}}", "U+FFFD"},
		{"truncated", `{"alice":{}`, "is not valid JSON (it ends too early)"},
		{"trailing", `{"alice":{}} {"bob":{}}`, "has more after its JSON object"},
		{"trailing comma", `{"alice":{},}`, "is not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %q, want an error containing %q", tc.in, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q): %v, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}
}

// TestEncode: what Encode writes is what OpenTofu's jsonencode writes of
// the same object (Go's encoding, as cty's) and reads back unchanged.
func TestEncode(t *testing.T) {
	names := []string{"zed", "a<b", "alice", "x&y"}
	got := Encode(names)
	if want := `{"a\u003cb":{},"alice":{},"x\u0026y":{},"zed":{}}`; got != want {
		t.Fatalf("Encode = %s, want %s", got, want)
	}
	back, err := Parse(got)
	if err != nil || !slices.Equal(back, []string{"a<b", "alice", "x&y", "zed"}) {
		t.Fatalf("Parse(Encode) = %q, %v", back, err)
	}
	if Encode(nil) != "{}" {
		t.Fatalf("Encode(nil) = %s", Encode(nil))
	}
}

// TestCanonicalAgreesWithDecoder: over random users values, some in the
// form jsonencode writes and some not, the fast path reads exactly what
// the JSON decoder reads, and refuses (leaving it to the decoder) what it
// cannot read that way. A fast path that accepted escapes, repeated or
// unsorted names, or names not in NFC fails this test.
func TestCanonicalAgreesWithDecoder(t *testing.T) {
	agreesWithDecoder(t, usersReader, randomUsers, 15)
}

// FuzzParse: whatever the input, the fast path agrees with the decoder,
// and every name read is non-empty, in NFC and listed once.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":{},"b":{}}`, `{"b":{},"a":{}}`, `{"a":{},"a":{}}`, `{"e\u0301":{}}`, "{\"\u00e9\":{}}", `{"a\u003c":{}}`, `{"":{}}`, `["a"]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { readsConsistently(t, usersReader, s) })
}

// reader is one of the package's two readings of a value: the fast path,
// the decoder, and Parse or ParseLegacy, which uses both.
type reader struct {
	name    string
	fast    func(string) ([]string, bool)
	decoder func(string) ([]string, error)
	parse   func(string) ([]string, error)
}

var usersReader = reader{"Parse", parseCanonical, parseJSON, Parse}

// agreesWithDecoder: over 20,000 values of gen, the fast path reads
// exactly what the decoder reads, and at least a tenth take it.
func agreesWithDecoder(t *testing.T, rd reader, gen func(*rand.Rand) string, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 20000))
	fast := 0
	for i := 0; i < 20000; i++ {
		s := gen(r)
		got, ok := rd.fast(s)
		want, err := rd.decoder(s)
		if !ok {
			continue
		}
		fast++
		if err != nil {
			t.Fatalf("fast path read %q as %q; the decoder refuses it: %v", s, got, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("fast path read %q as %q; the decoder reads %q", s, got, want)
		}
	}
	if fast < 2000 {
		t.Fatalf("only %d of 20000 random values took the fast path: the generator no longer tests it", fast)
	}
}

// readsConsistently: the fast path agrees with the decoder on s, and every
// name read is non-empty, in NFC and listed once.
func readsConsistently(t *testing.T, rd reader, s string) {
	t.Helper()
	if got, ok := rd.fast(s); ok {
		want, err := rd.decoder(s)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("fast path read %q as %q; the decoder: %q, %v", s, got, want, err)
		}
	}
	names, err := rd.parse(s)
	if err != nil {
		return
	}
	for i, n := range names {
		if n == "" || !norm.NFC.IsNormalString(n) || (i > 0 && names[i-1] >= n) {
			t.Fatalf("%s(%q) = %q: empty, not NFC, unsorted or repeated", rd.name, s, names)
		}
	}
}

// randomUsers is a users value: mostly what jsonencode writes of random
// names, sometimes changed the ways a hand-written value may differ.
func randomUsers(r *rand.Rand) string {
	alphabet := []string{"a", "b", "z", "0", ".", "@", "-", "_", "é", "e\u0301", "<", "&", `"`, `\`, "ß", "\u2028", "日"}
	n := r.IntN(6)
	names := make([]string, n)
	for i := range names {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		names[i] = b.String()
	}
	m := map[string]struct{}{}
	for _, n := range names {
		m[norm.NFC.String(n)] = struct{}{}
	}
	b, _ := json.Marshal(m)
	s := string(b)
	switch r.IntN(8) {
	case 0: // a name written decomposed or repeated
		if n > 0 {
			s = strings.Replace(s, "{", fmt.Sprintf(`{"%s":{},`, names[0]), 1)
		}
	case 1: // keys out of order
		if n > 1 {
			s = fmt.Sprintf(`{"%s":{},"%s":{}}`, "zz"+names[0], names[1])
		}
	case 2: // raw characters jsonencode would escape
		s = strings.ReplaceAll(strings.ReplaceAll(s, `\u003c`, "<"), `\u0026`, "&")
	case 3: // a value other than {}
		s = strings.Replace(s, ":{}", ":[]", 1)
	case 4: // spaces
		s = strings.ReplaceAll(s, ",", ", ")
	default:
		s = withSpace(r, s)
	}
	return s
}

// withSpace is s sometimes as a file holds it: indented (jq, an editor),
// spaced inside {}, ending in a newline.
func withSpace(r *rand.Rand, s string) string {
	switch r.IntN(4) {
	case 0:
		var b bytes.Buffer
		if json.Indent(&b, []byte(s), "", "  ") == nil {
			s = b.String()
		}
	case 1:
		s = strings.ReplaceAll(s, "{}", "{ }")
	case 2:
		s = " \t" + s + "\r\n"
	}
	if r.IntN(2) == 0 {
		s += "\n"
	}
	return s
}

// BenchmarkParse is users with 20,000 e-mail-like names, as jsonencode
// writes it: the fast path and the decoder.
func BenchmarkParse(b *testing.B) {
	names := make([]string, 20000)
	for i := range names {
		names[i] = fmt.Sprintf("firstname.lastname%05d@university.example.edu", i)
	}
	s := Encode(names)
	b.Run("canonical", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseCanonical(s); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("decoder", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseJSON(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A configured value also meets JupyterHub's rules for usernames; what a
// state written before holds is read as it is (Parse).
func TestParseConfigured(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"slash", `{"alice":{},"alice/gpu":{}}`, `has the username "alice/gpu", which holds "/"`},
		{"slash, not canonical", `{ "alice/gpu": {} }`, `which holds "/"`},
		{"white space at an end", `{" bob":{}}`, "starts or ends with white space"},
		{"not JSON", `alice`, "is not JSON"},
	} {
		if _, err := ParseConfigured(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseConfigured(%q): %v, want an error containing %q", tc.name, tc.in, err, tc.want)
		}
		if tc.name != "not JSON" {
			if names, err := Parse(tc.in); err != nil || len(names) == 0 {
				t.Errorf("%s: Parse(%q) = %q, %v: a state holding it must stay readable", tc.name, tc.in, names, err)
			}
		}
	}
	if names, err := ParseConfigured(`{"alice":{},"bob":{}}`); err != nil || len(names) != 2 {
		t.Errorf("ParseConfigured = %q, %v", names, err)
	}
}
