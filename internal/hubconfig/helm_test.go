package hubconfig

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
)

// chartFile reads a file of the zero-to-jupyterhub chart from
// ../shared/reference/z2jh/ relative to the repository root, found by
// walking up from this file to go.mod. A missing file fails the test.
func chartFile(t *testing.T, name string) map[string]any {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (go.mod) above " + file)
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "reference", "z2jh", name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the chart's %s is needed to check helm_values: %v", name, err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return m
}

// checkAgainstSchema walks every path of v through the chart's JSON schema
// (properties, patternProperties, additionalProperties) and checks the type
// of each value. Paths reached through named properties must also exist in
// the chart's values.yaml, so that each setting is one the chart reads.
func checkAgainstSchema(t reporter, path string, v any, schema, defaults map[string]any, inDefaults bool) {
	t.Helper()
	if !typeOK(schema, v) {
		t.Errorf("%s: %T value %v does not match the schema's type %v / enum %v", path, v, v, schema["type"], schema["enum"])
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	for k, child := range m {
		p := path + "." + k
		if s, ok := props[k].(map[string]any); ok {
			var d map[string]any
			dv, has := defaults[k]
			if inDefaults {
				if !has {
					t.Errorf("%s is in the schema but not in the chart's values.yaml", p)
				}
				d, _ = dv.(map[string]any)
			}
			checkAgainstSchema(t, p, child, s, d, inDefaults && d != nil)
			continue
		}
		matched := false
		if pp, ok := schema["patternProperties"].(map[string]any); ok {
			for pat, s := range pp {
				if regexp.MustCompile(pat).MatchString(k) {
					matched = true
					checkAgainstSchema(t, p, child, s.(map[string]any), nil, false)
				}
			}
		}
		if !matched && schema["additionalProperties"] == false {
			t.Errorf("%s is not allowed by the chart's schema (additionalProperties: false)", p)
		}
	}
}

func typeOK(schema map[string]any, v any) bool {
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return false
	}
	var types []string
	switch ty := schema["type"].(type) {
	case string:
		types = []string{ty}
	case []any:
		for _, x := range ty {
			types = append(types, fmt.Sprint(x))
		}
	default:
		return true
	}
	var kind string
	switch v.(type) {
	case map[string]any:
		kind = "object"
	case []any:
		kind = "array"
	case string:
		kind = "string"
	case bool:
		kind = "boolean"
	case float64:
		kind = "number"
	case nil:
		kind = "null"
	}
	return slices.Contains(types, kind) || kind == "number" && slices.Contains(types, "integer")
}

func dig(m map[string]any, path string) any { return hubtest.Dig(m, path) }

// helm_values parse as YAML, every path is one the chart's schema allows
// with the right type, each setting sits where the chart reads it, and
// nothing is a list: values files merge maps, but replace lists.
func TestSpawnerHelm_valuesMatchTheChart(t *testing.T) {
	schema, defaults := chartFile(t, "values.schema.yaml"), chartFile(t, "values.yaml")
	cases := map[string]Result{
		"rwo_with_profiles": mustBuild(t, Config{Home: homeSettings(claims.RWO), Profiles: []map[string]any{gpuProfileDict()}, Extra: map[string]any{"start_timeout": 600.0}}),
		"rwx_mount_path":    mustBuild(t, Config{Home: homeSettings(claims.RWX), HomeMountPath: "/home/{username}"}),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			v := helmValuesOf(t, r)
			checkAgainstSchema(t, "", v, schema, defaults, true)
			want := map[string]any{
				"singleuser.storage.capacity":                         "10Gi",
				"singleuser.storage.homeMountPath":                    r.HomeMountPath,
				"singleuser.storage.dynamic.storageClass":             "longhorn",
				"singleuser.storage.dynamic.pvcNameTemplate":          "claim-{username}",
				"singleuser.storage.dynamic.storageAccessModes":       []any{r.AccessMode},
				"hub.annotations." + ChecksumAnnotation:               Render(r).Checksum,
				"hub.extraConfig." + ExtraConfigKey:                   ExtraConfig(),
				"hub.extraFiles." + ExtraFilePython + ".mountPath":    FilesDir + "/" + PythonFile,
				"hub.extraFiles." + ExtraFilePython + ".binaryData":   base64.StdEncoding.EncodeToString(Render(r).PythonGzip),
				"hub.extraFiles." + ExtraFileDocument + ".mountPath":  FilesDir + "/" + DocumentFile,
				"hub.extraFiles." + ExtraFileDocument + ".binaryData": base64.StdEncoding.EncodeToString(Render(r).Document),
			}
			for p, w := range want {
				if got := dig(v, p); fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%s = %v, want %v", p, got, w)
				}
			}
			var walk func(p string, x any)
			walk = func(p string, x any) {
				switch x := x.(type) {
				case map[string]any:
					for k, y := range x {
						walk(p+"."+k, y)
					}
				case []any:
					if p != ".singleuser.storage.dynamic.storageAccessModes" {
						t.Errorf("%s is a list: it would replace, not merge with, another values file's", p)
					}
				}
			}
			walk("", v)
		})
	}
	if r := cases["rwx_mount_path"]; r.HomeMountPath != "/home/{username}" {
		t.Errorf("HomeMountPath = %q", r.HomeMountPath)
	}
}

// The checksum changes exactly when what the hub reads changes: a setting
// changes it, the same inputs give the same.
func TestSpawnerHelm_checksum(t *testing.T) {
	base := Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"start_timeout": 600.0}}
	sum := Render(mustBuild(t, base)).Checksum
	if again := Render(mustBuild(t, Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"start_timeout": 600.0}})).Checksum; again != sum {
		t.Error("the same configuration gave another checksum")
	}
	if Render(mustBuild(t, Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"start_timeout": 900.0}})).Checksum == sum {
		t.Error("a new setting left the checksum unchanged: the hub would not restart")
	}
}

// The walker rejects what the chart rejects, so the test above can fail.
func TestSpawnerHelm_schemaCheckCatchesMistakes(t *testing.T) {
	schema, defaults := chartFile(t, "values.schema.yaml"), chartFile(t, "values.yaml")
	bad := []map[string]any{
		{"singleuser": map[string]any{"storage": map[string]any{"type": "dynamic", "homeMountPath": "/h", "dynamic": map[string]any{"storageClassName": "x"}}}},
		{"singleuser": map[string]any{"storage": map[string]any{"type": "shared", "homeMountPath": "/h"}}},
		{"singleuser": map[string]any{"profileList": map[string]any{}}},
		{"hub": map[string]any{"config": map[string]any{"kubeSpawner": map[string]any{}}}},
	}
	for _, v := range bad {
		var c collector
		checkAgainstSchema(&c, "", v, schema, defaults, true)
		if len(c) == 0 {
			t.Errorf("accepted %v", v)
		}
	}
}

type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

type collector []string

func (c *collector) Helper()                           {}
func (c *collector) Errorf(format string, args ...any) { *c = append(*c, fmt.Sprintf(format, args...)) }
