package hubconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
)

// What a plan says about co-location follows the home's mode; which
// servers are pinned is decided at spawn from their claims (python_spawn_test.go).
func TestSpawnerBuild_colocationDerivation(t *testing.T) {
	cases := []struct {
		mode string
		want Mode
	}{
		{claims.RWX, ColocateByClaim},
		{claims.RWO, ColocateAll},
		{claims.RWOP, ColocateAll},
	}
	for _, tc := range cases {
		r := mustBuild(t, Config{Home: homeSettings(tc.mode)})
		if r.Colocation.Mode != tc.want {
			t.Errorf("%s: mode %s, want %s", tc.mode, r.Colocation.Mode, tc.want)
		}
		if r.Colocation.Label != DefaultColocationLabel || r.Colocation.TopologyKey != "kubernetes.io/hostname" {
			t.Errorf("label/topology: %+v", r.Colocation)
		}
		// Co-location is never written as settings: the hook carries it.
		if _, ok := r.Settings["extra_pod_config"]; ok {
			t.Errorf("extra_pod_config written")
		}
		// The document names no mode and no user.
		if got := JSON(r.Document()["colocation"]); got != `{"label":"hub.jupyter.org/colocate-user","topology_key":"kubernetes.io/hostname"}` {
			t.Errorf("document's colocation: %s", got)
		}
	}
}

func TestSpawnerBuild_settings(t *testing.T) {
	r := mustBuild(t, Config{
		Home:     homeSettings(claims.RWO),
		Profiles: []map[string]any{gpuProfileDict(), Profile{Slug: "small", DisplayName: "Small", Default: true}.Dict()},
		Extra: map[string]any{"start_timeout": 600.0,
			"volumes":       []any{map[string]any{"name": "singleuser-config", "configMap": map[string]any{"name": "cm"}}},
			"volume_mounts": []any{map[string]any{"name": "singleuser-config", "mountPath": "/etc/jupyter/x.py", "subPath": "x.py"}}},
	})
	s := r.Settings
	if s["start_timeout"] != 600.0 || s["pvc_name_template"] != "claim-{username}" || len(s["profile_list"].([]any)) != 2 {
		t.Fatalf("settings: %s", JSON(s))
	}
	if got := JSON(s["volumes"]); got != `[{"name":"home","persistentVolumeClaim":{"claimName":"{pvc_name}"}},{"configMap":{"name":"cm"},"name":"singleuser-config"}]` {
		t.Fatalf("extra volumes are not appended to the home's: %s", got)
	}
	// A profile with its own volumes keeps the global ones (the home first):
	// KubeSpawner replaces the list with the profile's.
	o := r.Profiles[0]["kubespawner_override"].(map[string]any)
	if got := JSON(o["volumes"]); got != `[{"name":"home","persistentVolumeClaim":{"claimName":"{pvc_name}"}},{"configMap":{"name":"cm"},"name":"singleuser-config"},{"name":"datasets","persistentVolumeClaim":{"claimName":"datasets","readOnly":true}}]` {
		t.Fatalf("profile volumes: %s", got)
	}
	if got := JSON(o["volume_mounts"]); !strings.HasPrefix(got, `[{"mountPath":"/home/jovyan","name":"home"}`) || !strings.Contains(got, `"mountPath":"/datasets"`) {
		t.Fatalf("profile volume_mounts: %s", got)
	}
	// The input profile is not changed.
	if in := JSON(gpuProfileDict()); strings.Contains(in, `"home"`) {
		t.Fatal("input modified")
	}
}

func TestSpawnerBuild_errors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		attr string
		want string
	}{
		{"no home", Config{Home: map[string]any{}}, "home_storage_settings", "spawner_settings"},
		{"home key in extra", Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"storage_access_modes": []any{"ReadWriteOnce"}}}, "extra_settings_json", "jupyter_home_storage"},
		{"profile_list in extra", Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"profile_list": []any{}}}, "extra_settings_json", "profiles"},
		{"volumes not a list", Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"volumes": map[string]any{}}}, "extra_settings_json", "JSON list"},
		{"home volume twice", Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"volumes": []any{map[string]any{"name": "home"}}}}, "extra_settings_json", `"home"`},
		{"duplicate slug", Config{Home: homeSettings(claims.RWX), Profiles: []map[string]any{{"slug": "a", "display_name": "A"}, {"slug": "a", "display_name": "B"}}}, "profiles", `slug "a"`},
		{"two defaults", Config{Home: homeSettings(claims.RWX), Profiles: []map[string]any{{"slug": "a", "display_name": "A", "default": true}, {"slug": "b", "display_name": "B", "default": true}}}, "profiles", "a, b"},
		{"not a profile", Config{Home: homeSettings(claims.RWX), Profiles: []map[string]any{{"slug": "a"}}}, "profiles", "profile_json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := Build(tc.cfg)
			if msg, ok := findings(errs)[tc.attr]; !ok || !strings.Contains(msg, tc.want) {
				t.Fatalf("want an error on %s containing %q, got %+v", tc.attr, tc.want, errs)
			}
		})
	}
}

func TestSpawnerWarnings(t *testing.T) {
	small := Profile{Slug: "small", DisplayName: "Small", CPUGuarantee: f(2), MemGuarantee: "8G"}.Dict()
	big := Profile{Slug: "big", DisplayName: "Big", CPUGuarantee: f(6), MemGuarantee: "48G"}.Dict()
	gpu := gpuProfileDict()
	nodes := []Node{cpuNode, gpuNode} // largest: gpu-1, 8 CPU, 64Gi

	// Under ReadWriteMany: no warning at all.
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX), Profiles: []map[string]any{small, big, gpu}})
	if ws := Warnings(r, nodes, 3); len(ws) != 0 {
		t.Fatalf("warnings under RWX: %v", ws)
	}

	r = mustBuild(t, Config{Home: homeSettings(claims.RWO), Profiles: []map[string]any{small, big, gpu}})
	ws := Warnings(r, nodes, 2)
	if len(ws) != 2 {
		t.Fatalf("want the two GPU warnings, got %v", ws)
	}
	for _, w := range ws {
		for _, s := range []string{"gpu", "ReadWriteMany", "ReadWriteOnce"} {
			if !strings.Contains(w.Detail, s) {
				t.Errorf("warning %q does not mention %q: %s", w.Summary, s, w.Detail)
			}
		}
	}
	if !strings.Contains(ws[0].Detail, "Pending until the spawn timeout") || !strings.Contains(ws[1].Detail, "scale it down") {
		t.Errorf("failure modes not named: %v", ws)
	}

	// Big (6 CPU, 48G) plus three apps on the smallest guarantees (1 CPU from gpu, 8G) needs 9 CPU: more than gpu-1 has (8).
	ws = Warnings(r, nodes, 4)
	if len(ws) != 3 {
		t.Fatalf("want the capacity warning too: %v", ws)
	}
	c := ws[2]
	for _, s := range []string{"gpu-1", "CPU 8", "memory 64Gi", "CPU 6 (big)", "memory 48Gi (big)", "3 app(s) on the smallest profile (CPU 1, memory 8Gi)", "needs CPU 9 and memory 72Gi", "colocated_servers = 4"} {
		if !strings.Contains(c.Detail, s) {
			t.Errorf("capacity warning lacks %q: %s", s, c.Detail)
		}
	}
	if c.Attribute != "colocated_servers" {
		t.Errorf("attribute %s", c.Attribute)
	}
	// Without nodes the capacity check is skipped.
	if ws := Warnings(r, nil, 3); len(ws) != 2 {
		t.Fatalf("without nodes: %v", ws)
	}

	// ReadWriteMany homes: only claims still ReadWriteOnce pin, at spawn;
	// the plan has nothing to say for every user.
	r = mustBuild(t, Config{Home: homeSettings(claims.RWX), Profiles: []map[string]any{gpu}})
	if ws = Warnings(r, nodes, 2); len(ws) != 0 {
		t.Fatalf("warnings with ReadWriteMany homes: %v", ws)
	}
}

// extra_settings_json's lists of named things need the field the rendered
// file merges them by; the error names the entry and the field.
func TestSpawnerBuild_namedListIdentities(t *testing.T) {
	cases := map[string]struct {
		extra map[string]any
		want  string
	}{
		"mount_without_path": {map[string]any{"volume_mounts": []any{map[string]any{"name": "x"}}}, `volume_mounts[0] has no mountPath`},
		"init_without_name":  {map[string]any{"init_containers": []any{map[string]any{"image": "busybox"}}}, `init_containers[0] has no name`},
		"not_a_list":         {map[string]any{"extra_containers": map[string]any{"name": "x"}}, `extra_containers must be a list`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := Build(Config{Home: homeSettings(claims.RWX), Extra: tc.extra})
			if len(errs) != 1 || errs[0].Attribute != "extra_settings_json" || !strings.Contains(errs[0].Summary, tc.want) {
				t.Fatalf("errors %+v, want one on extra_settings_json: %s", errs, tc.want)
			}
		})
	}
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX), Extra: map[string]any{"init_containers": []any{map[string]any{"name": "a", "image": "busybox"}}}})
	if JSON(r.Settings["init_containers"]) != `[{"image":"busybox","name":"a"}]` {
		t.Errorf("init_containers = %s", JSON(r.Settings["init_containers"]))
	}
}

// TestBuild_findingsInOneOrder: the findings of several bad extra settings
// come in the settings' name order at every run (a plan's diagnostics do
// not reorder between runs).
func TestBuild_findingsInOneOrder(t *testing.T) {
	extra := map[string]any{"volumes": map[string]any{}, "storage_access_modes": []any{claims.RWO}, "profile_list": []any{}, "modify_pod_hook": "x", "storage_class": "fast"}
	var first []string
	for range 30 {
		_, errs := Build(Config{Home: homeSettings(claims.RWX), Extra: extra})
		var got []string
		for _, e := range errs {
			got = append(got, e.Summary)
		}
		if first == nil {
			first = got
			if len(got) < 4 {
				t.Fatalf("want a finding per bad setting, got %q", got)
			}
			continue
		}
		if !slices.Equal(got, first) {
			t.Fatalf("findings reordered between runs:\n%q\n%q", first, got)
		}
	}
	want := []string{"modify_pod_hook cannot be JSON", "profile_list is set by profiles", "storage_access_modes is set by the home storage", "storage_class is set by the home storage", "volumes must be a list"}
	if !slices.Equal(first, want) {
		t.Errorf("findings = %q, want them in the settings' name order %q", first, want)
	}
}
