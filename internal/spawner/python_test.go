package spawner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// python is Debian's interpreter, which python3-traitlets installs into.
const python = "/usr/bin/python3"

// driver loads the rendered file the way JupyterHub loads a config file:
// c is a traitlets Config and the file runs with c in scope. pre.json holds
// settings earlier configuration made (a chart's own file); pods.json holds
// pods to run the hook on. It prints c.KubeSpawner and the hooked pods.
const driver = `
import asyncio, json, os, sys, types
import traitlets.config

d, runs, previous = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
path = os.path.join(d, "90-jupyter-spawner.py")
c = traitlets.config.Config()
for k, v in json.load(open(os.path.join(d, "pre.json"))).items():
    c.KubeSpawner[k] = v
if previous:
    def earlier_hook(spawner, pod):
        pod.metadata.labels["earlier-hook"] = "ran"
        return pod
    c.KubeSpawner.modify_pod_hook = earlier_hook
for _ in range(runs):
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), {"c": c, "__file__": path})

def plain(v):
    if isinstance(v, types.SimpleNamespace):
        return {k: plain(x) for k, x in vars(v).items()}
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v

out = {"settings": {k: v for k, v in c.KubeSpawner.items() if k not in ("modify_pod_hook", "pre_spawn_hook")},
       "hook": "modify_pod_hook" in c.KubeSpawner, "pods": [], "pvc_names": {}}
pre_spawn = c.KubeSpawner["pre_spawn_hook"] if "pre_spawn_hook" in c.KubeSpawner else None
hook = c.KubeSpawner["modify_pod_hook"] if out["hook"] else None
for p in json.load(open(os.path.join(d, "pods.json"))):
    affinity = p.get("affinity")
    if p.get("model"):
        # shaped like kubernetes_asyncio's V1Affinity, as KubeSpawner builds it
        affinity = types.SimpleNamespace(node_affinity="kept", pod_affinity=None, pod_anti_affinity=None)
    pod = types.SimpleNamespace(metadata=types.SimpleNamespace(name="jupyter-x", labels=dict(p["labels"])),
                                spec=types.SimpleNamespace(affinity=affinity, containers=[]))
    spawner = types.SimpleNamespace(user=types.SimpleNamespace(name=p["user"]), pvc_name="remembered-" + p["user"])
    if pre_spawn is not None:
        r = pre_spawn(spawner)
        if asyncio.iscoroutine(r):
            asyncio.run(r)
    out["pvc_names"][p["user"]] = spawner.pvc_name
    if hook is not None:
        pod = asyncio.run(hook(spawner, pod))
    out["pods"].append({"labels": pod.metadata.labels, "affinity": plain(pod.spec.affinity)})
print(json.dumps(out, default=lambda o: "<callable>" if callable(o) else repr(o)))
`

type pyPod struct {
	User     string            `json:"user"`
	Labels   map[string]string `json:"labels"`
	Affinity map[string]any    `json:"affinity,omitempty"`
	Model    bool              `json:"model,omitempty"`
}

type pyOut struct {
	Settings map[string]any    `json:"settings"`
	Hook     bool              `json:"hook"`
	PVCNames map[string]string `json:"pvc_names"`
	Pods     []struct {
		Labels   map[string]string `json:"labels"`
		Affinity any               `json:"affinity"`
	} `json:"pods"`
}

// requireTraitlets fails (never skips) when the interpreter lacks traitlets.
func requireTraitlets(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import traitlets.config").CombinedOutput()
	if err != nil {
		t.Fatalf("%s cannot import traitlets (%v: %s). Install it: apt-get update && apt-get install -y python3-traitlets", python, err, out)
	}
}

// runPython writes the rendered file and document to a temp dir and loads them.
func runPython(t *testing.T, r Result, pre map[string]any, pods []pyPod, runs int, previous bool) pyOut {
	t.Helper()
	requireTraitlets(t)
	dir := t.TempDir()
	if pre == nil {
		pre = map[string]any{}
	}
	if pods == nil {
		pods = []pyPod{}
	}
	prev := "0"
	if previous {
		prev = "1"
	}
	files := map[string]string{
		PythonFile:  Python(),
		JSONFile:    JSON(r.Document()),
		"pre.json":  JSON(pre),
		"pods.json": JSON(pods),
		"driver.py": driver,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(python, filepath.Join(dir, "driver.py"), dir, itoa(runs), prev)
	cmd.Env = append(os.Environ(), "PYTHONNOUSERSITE=1")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("python: %v\n%s", err, stderr)
	}
	var res pyOut
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("driver output: %v\n%s", err, out)
	}
	return res
}

func itoa(n int) string { return strings.TrimSpace(JSON(n)) }

func homeSettings(mode string) map[string]any {
	h := kubespawner.HomeStorage{AccessMode: mode, StorageClass: "longhorn", Capacity: "10Gi", NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe}
	var m map[string]any
	_ = json.Unmarshal([]byte(JSON(h.Settings())), &m)
	return m
}

func mustBuild(t *testing.T, c Config) Result {
	t.Helper()
	r, errs := Build(c)
	if len(errs) > 0 {
		t.Fatalf("Build: %+v", errs)
	}
	return r
}

func gpuProfileDict() map[string]any {
	one := 1.0
	return Profile{Slug: "gpu", DisplayName: "GPU", CPUGuarantee: &one, MemGuarantee: "8G", GPU: &GPU{Count: 1},
		Tolerations: []Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}},
		Volumes:     []Volume{{Name: "datasets", MountPath: "/datasets", ReadOnly: true, ClaimName: "datasets"}}}.Dict()
}

// The rendered file, loaded by real traitlets, sets c.KubeSpawner to exactly
// kubespawner_json, in each co-location mode.
func TestSpawnerPython_loadsInTraitlets(t *testing.T) {
	cases := map[string]Config{
		"rwo":           {Home: homeSettings(RWO), Profiles: []map[string]any{gpuProfileDict()}},
		"rwx":           {Home: homeSettings(RWX), Extra: map[string]any{"start_timeout": 600.0, "extra_labels": map[string]any{"team": "a"}}},
		"rwx_legacy":    {Home: homeSettings(RWX), LegacyUsers: []string{"alice"}, ColocationLabel: "nebari.dev/colocate-user"},
		"unicode_names": {Home: homeSettings(RWX), LegacyUsers: []string{"zoë@example.org"}, Extra: map[string]any{"environment": map[string]any{"GREETING": "héllo \"quoted\" \\ back"}}},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			r := mustBuild(t, cfg)
			got := runPython(t, r, nil, nil, 1, false)
			var want map[string]any
			if err := json.Unmarshal([]byte(JSON(r.Settings)), &want); err != nil {
				t.Fatal(err)
			}
			// A profile's lists of named things become callables that merge
			// them into the user's at spawn time (TestSpawnerCompose_*).
			profiles, _ := want["profile_list"].([]any)
			for _, p := range profiles {
				o, _ := p.(map[string]any)["kubespawner_override"].(map[string]any)
				for _, k := range []string{"volumes", "volume_mounts", "init_containers", "extra_containers", "tolerations"} {
					if _, ok := o[k]; ok {
						o[k] = "<callable>"
					}
				}
			}
			if !reflect.DeepEqual(got.Settings, want) {
				t.Fatalf("c.KubeSpawner after loading differs from kubespawner_json\n got: %s\nwant: %s", JSON(got.Settings), JSON(want))
			}
			if got.Hook != (r.Colocation.Mode != ColocateNone) {
				t.Fatalf("modify_pod_hook installed = %v in mode %s", got.Hook, r.Colocation.Mode)
			}
		})
	}
}

func colocationTerm(label, value string) map[string]any {
	return map[string]any{
		"labelSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": label, "operator": "In", "values": []any{value}}}},
		"topologyKey":   "kubernetes.io/hostname",
	}
}

// Under keep_existing, a legacy user's pod gets the label and the required
// affinity with the same label-safe value; a migrated user's pod is unchanged.
func TestSpawnerPython_hookLegacyUsers(t *testing.T) {
	const email = "T.Potts@OpenTeams.com"
	r := mustBuild(t, Config{Home: homeSettings(RWX), LegacyUsers: []string{email, "carol"}})
	value, _ := kubespawner.UsernameLabel(email)
	if value == "" || !kubespawner.IsValidLabelValue(value) {
		t.Fatalf("label value %q", value)
	}
	got := runPython(t, r, nil, []pyPod{
		{User: email, Labels: map[string]string{"hub.jupyter.org/username": value}},
		{User: "bob", Labels: map[string]string{"hub.jupyter.org/username": "bob"}},
		{User: "carol", Labels: map[string]string{}, Model: true},
	}, 1, false)
	legacy, migrated, model := got.Pods[0], got.Pods[1], got.Pods[2]
	if legacy.Labels[DefaultColocationLabel] != value {
		t.Errorf("legacy pod label = %q, want %q", legacy.Labels[DefaultColocationLabel], value)
	}
	wantAff := map[string]any{"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{colocationTerm(DefaultColocationLabel, value)}}}
	if !reflect.DeepEqual(legacy.Affinity, wantAff) {
		t.Errorf("legacy pod affinity = %s, want %s", JSON(legacy.Affinity), JSON(wantAff))
	}
	if _, ok := migrated.Labels[DefaultColocationLabel]; ok || migrated.Affinity != nil {
		t.Errorf("migrated user's pod was changed: %v %v", migrated.Labels, migrated.Affinity)
	}
	// An affinity KubeSpawner built as a model keeps its node affinity.
	wantModel := map[string]any{"node_affinity": "kept", "pod_anti_affinity": nil,
		"pod_affinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{colocationTerm(DefaultColocationLabel, "carol")}}}
	if !reflect.DeepEqual(model.Affinity, wantModel) {
		t.Errorf("model affinity = %s, want %s", JSON(model.Affinity), JSON(wantModel))
	}
}

// Under ReadWriteOnce every pod is pinned, with the value of its own
// username label; a hook set earlier still runs; loading twice (the
// jupyterhub_config.d file, then the hub.extraConfig entry) adds one term.
func TestSpawnerPython_hookAllUsers(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(RWO), ColocationLabel: "nebari.dev/colocate-user"})
	existing := map[string]any{"nodeAffinity": map[string]any{"x": "y"},
		"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{colocationTerm("other", "v")}}}
	got := runPython(t, r, nil, []pyPod{
		{User: "Ann@x.org", Labels: map[string]string{"hub.jupyter.org/username": "ann-x-org---1a2b3c4d"}},
		{User: "dan", Labels: map[string]string{"hub.jupyter.org/username": "dan"}, Affinity: existing},
	}, 2, true)
	ann, dan := got.Pods[0], got.Pods[1]
	if ann.Labels["nebari.dev/colocate-user"] != "ann-x-org---1a2b3c4d" || ann.Labels["earlier-hook"] != "ran" {
		t.Errorf("labels = %v", ann.Labels)
	}
	want := map[string]any{"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{colocationTerm("nebari.dev/colocate-user", "ann-x-org---1a2b3c4d")}}}
	if !reflect.DeepEqual(ann.Affinity, want) {
		t.Errorf("affinity = %s, want %s", JSON(ann.Affinity), JSON(want))
	}
	wantDan := map[string]any{"nodeAffinity": map[string]any{"x": "y"},
		"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{colocationTerm("other", "v"), colocationTerm("nebari.dev/colocate-user", "dan")}}}
	if !reflect.DeepEqual(dan.Affinity, wantDan) {
		t.Errorf("existing affinity not extended once: %s", JSON(dan.Affinity))
	}
}

// Co-location on the label that earlier configuration wrote (Nebari's
// templated "{username}" label and affinity) is removed; the rest stays.
// Under ReadWriteMany no pod is pinned.
func TestSpawnerPython_replacesEarlierColocation(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(RWX), ColocationLabel: "nebari.dev/colocate-user"})
	pre := map[string]any{
		"extra_labels": map[string]any{"hub.jupyter.org/network-access-hub": "true", "nebari.dev/colocate-user": "{username}"},
		"extra_pod_config": map[string]any{
			"affinity":        map[string]any{"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{colocationTerm("nebari.dev/colocate-user", "{username}")}}},
			"securityContext": map[string]any{"fsGroup": 100.0, "fsGroupChangePolicy": "OnRootMismatch"},
		},
	}
	got := runPython(t, r, pre, []pyPod{{User: "alice", Labels: map[string]string{"hub.jupyter.org/username": "alice"}}}, 1, false)
	if want := map[string]any{"hub.jupyter.org/network-access-hub": "true"}; !reflect.DeepEqual(got.Settings["extra_labels"], want) {
		t.Errorf("extra_labels = %v, want %v", got.Settings["extra_labels"], want)
	}
	if want := map[string]any{"securityContext": map[string]any{"fsGroup": 100.0, "fsGroupChangePolicy": "OnRootMismatch"}}; !reflect.DeepEqual(got.Settings["extra_pod_config"], want) {
		t.Errorf("extra_pod_config = %v, want %v", JSON(got.Settings["extra_pod_config"]), JSON(want))
	}
	if got.Hook || got.Pods[0].Affinity != nil || len(got.Pods[0].Labels) != 1 {
		t.Errorf("a pod was pinned under ReadWriteMany: hook=%v %+v", got.Hook, got.Pods[0])
	}
}

// The hub.extraConfig entry is valid Python that runs the mounted file.
func TestSpawnerPython_extraConfigCompiles(t *testing.T) {
	requireTraitlets(t)
	src := ExtraConfig()
	if !strings.Contains(src, ConfigDir+"/"+PythonFile) {
		t.Fatalf("extraConfig does not name the mounted file:\n%s", src)
	}
	cmd := exec.Command(python, "-c", "import sys; compile(sys.stdin.read(), 'extraConfig', 'exec')")
	cmd.Stdin = strings.NewReader(src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("extraConfig does not compile: %v\n%s", err, out)
	}
}

// A user whose home was copied to a new claim spawns on that claim, even
// though KubeSpawner restored the remembered name; other users keep theirs;
// home_claims never reaches c.KubeSpawner as a setting; loading twice
// installs one hook, and without home_claims no hook is left behind.
func TestSpawnerPython_homeClaims(t *testing.T) {
	home := homeSettings(RWX)
	home[HomeClaimsKey] = map[string]any{"alice": "home-alice"}
	r := mustBuild(t, Config{Home: home})
	if r.HomeClaims["alice"] != "home-alice" {
		t.Fatalf("HomeClaims = %v", r.HomeClaims)
	}
	pods := []pyPod{{User: "alice", Labels: map[string]string{}}, {User: "bob", Labels: map[string]string{}}}
	for _, runs := range []int{1, 2} {
		got := runPython(t, r, nil, pods, runs, false)
		if got.PVCNames["alice"] != "home-alice" || got.PVCNames["bob"] != "remembered-bob" {
			t.Errorf("runs=%d: pvc names %v", runs, got.PVCNames)
		}
		if _, ok := got.Settings[HomeClaimsKey]; ok {
			t.Errorf("home_claims was applied to c.KubeSpawner")
		}
	}
	plain := mustBuild(t, Config{Home: homeSettings(RWX)})
	if got := runPython(t, plain, nil, pods, 1, false); got.PVCNames["alice"] != "remembered-alice" {
		t.Errorf("without home_claims: pvc names %v", got.PVCNames)
	}
}
