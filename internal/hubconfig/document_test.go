package hubconfig

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// largeHub is a configuration as a large hub writes it: four GPU profiles
// (tolerations, volumes) and extra settings. It names no
// user: nothing the hub reads grows with users.
func largeHub(t *testing.T) Result {
	t.Helper()
	var profiles []map[string]any
	for i := range 4 {
		p := gpuProfileDict()
		p["slug"], p["display_name"] = fmt.Sprintf("gpu-%d", i), fmt.Sprintf("GPU %d", i)
		profiles = append(profiles, p)
	}
	extra := map[string]any{"start_timeout": 600.0, "extra_labels": map[string]any{"team": "a"}}
	return mustBuild(t, Config{Home: homeSettings(claims.RWX), Profiles: profiles, Extra: extra})
}

// The hub Secret the helm values add to stays far under 64 KiB whatever
// the number of users (the document holds settings and profiles only),
// and the document decodes to what was built.
func TestSpawnerDocument_sizeIsConstantInUsers(t *testing.T) {
	r := largeHub(t)
	f := Render(r)
	helm, err := HelmYAML(HelmValues(r, f))
	if err != nil {
		t.Fatal(err)
	}
	s := SizesOf(f, helm)
	if s.HubSecret > 64<<10 {
		t.Errorf("the helm values add %d bytes to the hub Secret, more than 64 KiB", s.HubSecret)
	}
	if errs, warnings := SizeFindings(r, s, "jupyter-spawner"); len(errs)+len(warnings) > 0 {
		t.Errorf("size findings: %v %v", errs, warnings)
	}
	var doc map[string]any
	if err := DecodeDocumentFile(f.Document, &doc); err != nil {
		t.Fatal(err)
	}
	if JSON(doc) != JSON(r.Document()) || len(doc) != 2 {
		t.Errorf("the document decodes to %s, want %s", JSON(doc), JSON(r.Document()))
	}
}

// The compressed document is the same bytes for the same content (no
// time or name in the gzip header), other bytes for other content, and
// decodes to the document; the checksum is Render's and follows the
// content.
func TestSpawnerDocument_deterministic(t *testing.T) {
	home := homeSettings(claims.RWX)
	r := mustBuild(t, Config{Home: home, Extra: map[string]any{"start_timeout": 600.0}})
	f := Render(r)
	if again := Render(mustBuild(t, Config{Home: home, Extra: map[string]any{"start_timeout": 600.0}})); !bytes.Equal(again.Document, f.Document) || again.Checksum != f.Checksum {
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
	var want, fromConfigMap map[string]any
	if err := json.Unmarshal([]byte(JSON(r.Document())), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("decoded %v, want %v", doc, want)
	}
	if err := DecodeConfigMapDocument(map[string][]byte{DocumentFile: f.Document}, &fromConfigMap); err != nil || !reflect.DeepEqual(fromConfigMap, want) {
		t.Errorf("decoded from the ConfigMap %v (%v), want %v", fromConfigMap, err, want)
	}
	other := Render(mustBuild(t, Config{Home: home, Extra: map[string]any{"start_timeout": 601.0}}))
	if bytes.Equal(other.Document, f.Document) || other.Checksum == f.Checksum {
		t.Error("another setting gave the same document or checksum")
	}
	if err := DecodeDocumentFile([]byte(JSON(r.Document())), &doc); err == nil {
		t.Error("plain JSON decoded as the compressed document")
	}
	if err := DecodeConfigMapDocument(nil, &doc); err != ErrNoDocument {
		t.Errorf("a ConfigMap without a document: %v", err)
	}
}

// The hub reads the compressed document; a document it cannot read (or
// none) stops it.
func TestSpawnerPython_readsTheDocument(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"start_timeout": 600.0}})
	var pods []pyPod
	current := func(got pyOut) bool {
		return got.Settings["start_timeout"] == 600.0
	}
	gz := Render(r).Document
	for name, docs := range map[string]map[string][]byte{
		"compressed": {DocumentFile: gz},
		"corrupt":    {DocumentFile: gz[:len(gz)/2]},
		"not_gzip":   {DocumentFile: []byte(JSON(r.Document()))},
		"missing":    {},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := runPythonDocs(t, docs, nil, pods, 1, "0")
			switch name {
			case "compressed":
				if err != nil {
					t.Fatal(err)
				}
				if !current(got) {
					t.Errorf("settings %v: not the current document's", got.Settings)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), "jupyter_spawner_config: cannot read") {
					t.Errorf("the hub loaded an unreadable document (%v): settings %v", err, got.Settings)
				}
			}
		})
	}
}

// The size checks: an error naming profiles when the ConfigMap exceeds
// the API server's limit; a warning on the same attribute, naming the
// ConfigMap mount, when the helm values exceed the hub Secret's or Helm's
// release record's budget.
func TestSpawnerSizeFindings(t *testing.T) {
	hub := largeHub(t)
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
		{name: "small", r: hub, s: small},
		{name: "hub_secret_at_budget", r: hub, s: with(func(s *Sizes) { s.HubSecret = HubSecretBudget })},
		{name: "hub_secret_over", r: hub, s: with(func(s *Sizes) { s.HubSecret = HubSecretBudget + 1 }), warn: true, warnAttr: "profiles"},
		{name: "release_at_budget", r: hub, s: with(func(s *Sizes) { s.HelmRelease = HelmReleaseBudget })},
		{name: "release_over", r: hub, s: with(func(s *Sizes) { s.HelmRelease = HelmReleaseBudget + 1 }), warn: true, warnAttr: "profiles"},
		{name: "configmap_at_limit", r: hub, s: with(func(s *Sizes) { s.ConfigMap = MaxObjectBytes })},
		{name: "configmap_over", r: hub, s: with(func(s *Sizes) { s.ConfigMap, s.DocumentJSON = MaxObjectBytes+1, 5<<20 }), errAttr: "profiles",
			errDetails: []string{`ConfigMap "hub-files"`, "1024 KiB", "4 profile(s)", "5120 KiB as JSON", "at most 1024 KiB", "extra_settings_json"}},
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
	r := largeHub(t)
	f := Render(r)
	helm, err := HelmYAML(HelmValues(r, f))
	if err != nil {
		t.Fatal(err)
	}
	s := SizesOf(f, helm)
	if s.ConfigMap != len(f.Python)+len(f.Document) || s.HubSecret != len(helm)+len(f.PythonGzip)+len(f.Document) || s.DocumentJSON != len(JSON(r.Document())) {
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
// the file, the document (even one whose settings decode the same), a
// document that is not gzip, none.
func TestSpawnerConfigMapChecksum(t *testing.T) {
	r := largeHub(t)
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
