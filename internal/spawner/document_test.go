package spawner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// emailUsers are n distinct e-mail-like usernames,
// firstname.lastname1234@university.example.edu, drawn with a fixed seed
// from about 900 first names, 27,000 last names and 9,000 numbers, about
// as varied as a campus directory.
func emailUsers(n int) []string {
	syllables := []string{"an", "be", "ca", "do", "el", "fi", "ga", "ha", "in", "jo", "ka", "li", "ma", "ne", "ol",
		"pe", "ra", "si", "ta", "ul", "va", "wi", "xe", "yo", "zu", "ber", "son", "man", "ler", "ton"}
	rng := rand.New(rand.NewPCG(1, 2))
	name := func(k int) string {
		var b strings.Builder
		for range k {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		return b.String()
	}
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		u := fmt.Sprintf("%s.%s%d@university.example.edu", name(2), name(3), 1000+rng.IntN(9000))
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// campus is a ReadWriteMany hub of 20,000 users with e-mail-like names:
// legacy of them keep a ReadWriteOnce claim, copied have a copied home,
// the rest are migrated or new.
func campus(t *testing.T, legacy, copied int) (Result, []string) {
	t.Helper()
	users := emailUsers(20000)
	home := homeSettings(RWX)
	claims := map[string]any{}
	for i, u := range users[legacy : legacy+copied] {
		claims[u] = fmt.Sprintf("home-%05d", i)
	}
	home[HomeClaimsKey] = claims
	return mustBuild(t, Config{Home: home, LegacyUsers: users[:legacy], Profiles: []map[string]any{gpuProfileDict()}}), users
}

// At 20,000 users with e-mail-like names, whether all keep a legacy claim
// (the first plan after a switch to ReadWriteMany), half were copied or
// all were, the ConfigMap fits the API server's limit (as plain JSON the
// document alone takes about 1.5 MB to 2 MB); the hub reads back exactly
// the users and claims; and the hub, loading the file with traitlets,
// pins a legacy user, points a copied user at the copy and leaves the
// others on their claim.
func TestSpawnerDocument_fitsAtCampusScale(t *testing.T) {
	for _, c := range []struct {
		name           string
		legacy, copied int
	}{{"all_legacy", 20000, 0}, {"half_copied", 10000, 10000}, {"all_copied", 0, 20000}} {
		t.Run(c.name, func(t *testing.T) {
			r, users := campus(t, c.legacy, c.copied)
			if len(r.Colocation.Users) != c.legacy || len(r.HomeClaims) != c.copied {
				t.Fatalf("built %d legacy users and %d home claims", len(r.Colocation.Users), len(r.HomeClaims))
			}
			f := Render(r)
			helm, err := HelmYAML(HelmValues(r, f))
			if err != nil {
				t.Fatal(err)
			}
			s := SizesOf(f, helm)
			errs, _ := SizeFindings(r, s, "jupyter-spawner")
			if s.ConfigMap > MaxObjectBytes || len(errs) > 0 {
				t.Fatalf("the ConfigMap takes %d bytes (the document %d as JSON, %d compressed), more than the API server's %d: %v",
					s.ConfigMap, f.DocumentJSONBytes, len(f.Document), MaxObjectBytes, errs)
			}
			if s.HubSecret > MaxObjectBytes {
				t.Errorf("helm_values takes %d bytes of the hub Secret, more than the API server's %d", s.HubSecret, MaxObjectBytes)
			}
			var doc struct {
				Colocation Colocation        `json:"colocation"`
				HomeClaims map[string]string `json:"home_claims"`
			}
			if err := DecodeDocumentFile(f.Document, &doc); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(doc.Colocation, r.Colocation) || !maps.Equal(doc.HomeClaims, r.HomeClaims) {
				t.Fatalf("the document decodes to %d legacy users and %d home claims, not the %d and %d built", len(doc.Colocation.Users), len(doc.HomeClaims), c.legacy, c.copied)
			}

			// The hub loads the compressed document and mounts each kind
			// of user's claim.
			var pods []pyPod
			kinds := map[string]string{}
			add := func(kind, u string) {
				kinds[u] = kind
				pods = append(pods, pyPod{User: u, Labels: map[string]string{"hub.jupyter.org/username": "x"}})
			}
			if c.legacy > 0 {
				add("legacy", users[0])
				add("legacy", users[c.legacy-1])
			}
			if c.copied > 0 {
				add("copied", users[c.legacy])
				add("copied", users[c.legacy+c.copied-1])
			}
			if c.legacy+c.copied < len(users) {
				add("migrated or new", users[len(users)-1])
			}
			add("new", "nobody.listed@university.example.edu")
			got := runPython(t, r, nil, pods, 1, false)
			for i, p := range pods {
				pinned := got.Pods[i].Labels[DefaultColocationLabel]
				claim := got.PVCNames[p.User]
				switch kinds[p.User] {
				case "legacy":
					if pinned != r.Colocation.Users[p.User] || pinned == "" || claim != "remembered-"+p.User {
						t.Errorf("legacy user %s: pinned on %q, claim %s; want %q and the remembered claim", p.User, pinned, claim, r.Colocation.Users[p.User])
					}
				case "copied":
					if pinned != "" || claim != r.HomeClaims[p.User] || claim == "" {
						t.Errorf("copied user %s: pinned on %q, claim %s; want none and %s", p.User, pinned, claim, r.HomeClaims[p.User])
					}
				default:
					if pinned != "" || claim != "remembered-"+p.User {
						t.Errorf("%s user %s: pinned on %q, claim %s; want none and the remembered claim", kinds[p.User], p.User, pinned, claim)
					}
				}
			}
		})
	}
}

// The compressed document is the same bytes for the same content (no
// time or name in the gzip header), other bytes for other content, and
// decodes to the document; the checksum is Render's and follows the
// content.
func TestSpawnerDocument_deterministic(t *testing.T) {
	home := homeSettings(RWX)
	home[HomeClaimsKey] = map[string]any{"carol": "home-carol"}
	r := mustBuild(t, Config{Home: home, LegacyUsers: []string{"alice", "zoë@example.org"}})
	f := Render(r)
	if again := Render(mustBuild(t, Config{Home: home, LegacyUsers: []string{"zoë@example.org", "alice", "alice"}})); !bytes.Equal(again.Document, f.Document) || again.Checksum != f.Checksum {
		t.Fatal("the same configuration gave other bytes or another checksum")
	}
	// RFC 1952: ID1 ID2 CM FLG MTIME(4) ...; no FNAME/FCOMMENT/FEXTRA flag, no time.
	if len(f.Document) < 10 || f.Document[0] != 0x1f || f.Document[1] != 0x8b || f.Document[3] != 0 || !bytes.Equal(f.Document[4:8], []byte{0, 0, 0, 0}) {
		t.Fatalf("gzip header % x carries flags or a time", f.Document[:10])
	}
	// The checksum is over the file and the document's JSON, not its gzip.
	sum := sha256.Sum256([]byte(Python() + "\x00" + JSON(r.Document())))
	if want := hex.EncodeToString(sum[:]); f.Checksum != want {
		t.Errorf("Render's checksum %s, want the SHA-256 of the file and the JSON %s", f.Checksum, want)
	}
	var doc map[string]any
	if err := DecodeDocumentFile(f.Document, &doc); err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := DecodeConfigMapDocument(map[string]string{JSONFile: JSON(r.Document())}, nil, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("decoded %v, want %v", doc, want)
	}
	other := Render(mustBuild(t, Config{Home: home, LegacyUsers: []string{"alice"}}))
	if bytes.Equal(other.Document, f.Document) || other.Checksum == f.Checksum {
		t.Error("another legacy user list gave the same document or checksum")
	}
	if err := DecodeDocumentFile([]byte(JSON(r.Document())), &doc); err == nil {
		t.Error("plain JSON decoded as the compressed document")
	}
	if err := DecodeConfigMapDocument(map[string]string{PythonFile: Python()}, nil, &doc); err != ErrNoDocument {
		t.Errorf("a ConfigMap without a document: %v", err)
	}
}

// The hub reads the compressed document; a plain JSON one (an older
// provider's) only when there is no compressed one, so a stale JSON file
// left beside it changes nothing; a document it cannot read stops it.
func TestSpawnerPython_readsTheDocument(t *testing.T) {
	home := homeSettings(RWX)
	home[HomeClaimsKey] = map[string]any{"carol": "home-carol"}
	r := mustBuild(t, Config{Home: home, LegacyUsers: []string{"alice"}})
	stale := mustBuild(t, Config{Home: homeSettings(RWX), LegacyUsers: []string{"alice", "carol"}}) // before carol's copy
	pods := []pyPod{{User: "alice", Labels: map[string]string{}}, {User: "carol", Labels: map[string]string{}}}
	current := func(got pyOut) bool {
		return got.PVCNames["carol"] == "home-carol" && got.Pods[1].Labels[DefaultColocationLabel] == "" && got.Pods[0].Labels[DefaultColocationLabel] == "alice"
	}
	gz := Render(r).Document
	for name, docs := range map[string]map[string][]byte{
		"compressed":       {DocumentFile: gz},
		"stale_json_too":   {DocumentFile: gz, JSONFile: []byte(JSON(stale.Document()))},
		"older_provider":   {JSONFile: []byte(JSON(r.Document()))},
		"corrupt":          {DocumentFile: gz[:len(gz)/2], JSONFile: []byte(JSON(r.Document()))},
		"not_gzip":         {DocumentFile: []byte(JSON(r.Document()))},
		"missing":          {},
		"corrupt_json_old": {JSONFile: []byte(`{"KubeSpawner": `)},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := runPythonDocs(t, docs, nil, pods, 1, "0")
			switch name {
			case "compressed", "stale_json_too", "older_provider":
				if err != nil {
					t.Fatal(err)
				}
				if !current(got) {
					t.Errorf("pvc names %v, pods %v: not the current document's", got.PVCNames, got.Pods)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "jupyter_spawner_config: cannot read") {
					t.Errorf("the hub loaded an unreadable document (%v): pvc names %v", err, got.PVCNames)
				}
			}
		})
	}
}

// The size checks: an error naming legacy_users (or home_storage_settings
// when copied homes dominate) when the ConfigMap exceeds the API server's
// limit; a warning on the same attribute, naming the ConfigMap mount,
// when the helm values exceed the hub Secret's or Helm's release record's
// budget.
func TestSpawnerSizeFindings(t *testing.T) {
	legacy := mustBuild(t, Config{Home: homeSettings(RWX), LegacyUsers: []string{"alice", "bob"}})
	home := homeSettings(RWX)
	home[HomeClaimsKey] = map[string]any{"carol": "home-carol", "dave": "home-dave", "erin": "home-erin"}
	copied := mustBuild(t, Config{Home: home, LegacyUsers: []string{"alice"}})
	small := Sizes{ConfigMap: 20 << 10, HubSecret: 50 << 10, HelmRelease: 60 << 10, DocumentJSON: 30 << 10}
	with := func(f func(*Sizes)) Sizes { s := small; f(&s); return s }
	cases := []struct {
		name       string
		r          Result
		s          Sizes
		errAttr    string
		warn       bool
		warnAttr   string
		errDetails []string
	}{
		{name: "small", r: legacy, s: small},
		{name: "hub_secret_at_budget", r: legacy, s: with(func(s *Sizes) { s.HubSecret = HubSecretBudget })},
		{name: "hub_secret_over", r: legacy, s: with(func(s *Sizes) { s.HubSecret = HubSecretBudget + 1 }), warn: true, warnAttr: "legacy_users"},
		{name: "hub_secret_over_copied", r: copied, s: with(func(s *Sizes) { s.HubSecret = HubSecretBudget + 1 }), warn: true, warnAttr: "home_storage_settings"},
		{name: "release_at_budget", r: legacy, s: with(func(s *Sizes) { s.HelmRelease = HelmReleaseBudget })},
		{name: "release_over", r: legacy, s: with(func(s *Sizes) { s.HelmRelease = HelmReleaseBudget + 1 }), warn: true, warnAttr: "legacy_users"},
		{name: "configmap_at_limit", r: legacy, s: with(func(s *Sizes) { s.ConfigMap = MaxObjectBytes })},
		{name: "configmap_over", r: legacy, s: with(func(s *Sizes) { s.ConfigMap, s.DocumentJSON = MaxObjectBytes+1, 5<<20 }), errAttr: "legacy_users",
			errDetails: []string{`ConfigMap "hub-files"`, "1024 KiB", "2 legacy user(s) and 0 copied home(s)", "5120 KiB as JSON", "at most 1024 KiB", `on_mode_change = "migrate"`}},
		{name: "configmap_over_copied", r: copied, s: with(func(s *Sizes) { s.ConfigMap = 2 << 20 }), errAttr: "home_storage_settings",
			errDetails: []string{"1 legacy user(s) and 3 copied home(s)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs, warnings := SizeFindings(c.r, c.s, "hub-files")
			if (len(errs) > 0) != (c.errAttr != "") || len(errs) > 1 {
				t.Fatalf("errors %v, want one on %q", errs, c.errAttr)
			}
			if len(errs) == 1 {
				if errs[0].Attribute != c.errAttr {
					t.Errorf("error on %s, want %s", errs[0].Attribute, c.errAttr)
				}
				for _, d := range c.errDetails {
					if !strings.Contains(errs[0].Detail, d) {
						t.Errorf("error lacks %q: %s", d, errs[0].Detail)
					}
				}
			}
			if (len(warnings) == 1) != c.warn || len(warnings) > 1 {
				t.Fatalf("warnings %v, want %v", warnings, c.warn)
			}
			if c.warn {
				w := warnings[0]
				for _, d := range []string{"provider::jupyter::helm_values", "hub.extraFiles", "hub Secret", "release record", `ConfigMap "hub-files"`, "hub.extraVolumes", "hub.extraVolumeMounts",
					PythonFile, DocumentFile, ConfigDir, ChecksumAnnotation, "hub_checksum", ExtraConfigKey} {
					if !strings.Contains(w.Detail, d) {
						t.Errorf("warning lacks %q: %s", d, w.Detail)
					}
				}
				if w.Attribute != c.warnAttr {
					t.Errorf("warning on %s, want %s", w.Attribute, c.warnAttr)
				}
			}
		})
	}
}

// SizesOf counts what the API server counts: the ConfigMap's values (the
// file and the compressed document), and for the hub Secret the values
// text besides the files.
func TestSpawnerSizesOf(t *testing.T) {
	r, _ := campus(t, 1000, 1000)
	f := Render(r)
	helm, err := HelmYAML(HelmValues(r, f))
	if err != nil {
		t.Fatal(err)
	}
	s := SizesOf(f, helm)
	if s.ConfigMap != len(f.Python)+len(f.Document) || s.HubSecret != len(helm)+s.ConfigMap || s.DocumentJSON != len(JSON(r.Document())) {
		t.Errorf("sizes %+v for a file of %d, a document of %d (%d as JSON) and values of %d bytes", s, len(f.Python), len(f.Document), len(JSON(r.Document())), len(helm))
	}
	// The release record holds the document three times as base64 of
	// compressed data, then base64 again: never less than four times it.
	if s.HelmRelease < 4*len(f.Document) {
		t.Errorf("release record estimate %d for a document of %d bytes", s.HelmRelease, len(f.Document))
	}
}

// ConfigMapChecksum is the rendered Checksum for the ConfigMap the
// provider writes, and another one for every edit of what the hub reads:
// the file, the document (even one whose settings decode the same), the
// plain document of earlier versions, a document that is not gzip, none.
func TestSpawnerConfigMapChecksum(t *testing.T) {
	r, _ := campus(t, 50, 20)
	f := Render(r)
	data := map[string]string{PythonFile: f.Python}
	binary := map[string][]byte{DocumentFile: f.Document}
	if got := ConfigMapChecksum(data, binary); got != f.Checksum {
		t.Fatalf("the rendered ConfigMap's checksum is %s, want the rendered %s", got, f.Checksum)
	}
	doc, err := inflate(f.Document)
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]func(d map[string]string, b map[string][]byte){
		"file edited":  func(d map[string]string, _ map[string][]byte) { d[PythonFile] += "\n" },
		"file removed": func(d map[string]string, _ map[string][]byte) { delete(d, PythonFile) },
		"document edited": func(_ map[string]string, b map[string][]byte) {
			b[DocumentFile] = gzipBytes(append(bytes.Clone(doc), ' '))
		},
		"document not gzip": func(_ map[string]string, b map[string][]byte) {
			b[DocumentFile] = doc
		},
		"plain document of earlier versions": func(d map[string]string, b map[string][]byte) {
			delete(b, DocumentFile)
			d[JSONFile] = string(doc) + "\n"
		},
		"no document": func(_ map[string]string, b map[string][]byte) { delete(b, DocumentFile) },
	}
	for name, edit := range edits {
		d, b := maps.Clone(data), maps.Clone(binary)
		edit(d, b)
		if got := ConfigMapChecksum(d, b); got == f.Checksum {
			t.Errorf("%s: the checksum did not change", name)
		}
	}
}
