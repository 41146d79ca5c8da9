package spawner

import (
	"encoding/json"
	"fmt"
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

d, runs, previous = sys.argv[1], int(sys.argv[2]), sys.argv[3]
path = os.path.join(d, "90-jupyter-spawner.py")
c = traitlets.config.Config()
pre = json.load(open(os.path.join(d, "pre.json")))
earlier_profiles = pre.pop("earlier_profile_callable", None)
for k, v in pre.items():
    c.KubeSpawner[k] = v
if earlier_profiles is not None:
    async def per_user_profiles(spawner):
        return [{k: v for k, v in p.items() if k != "only"} for p in earlier_profiles if spawner.user.name in p.get("only", [spawner.user.name])]
    c.KubeSpawner.profile_list = per_user_profiles
if previous == "1":
    def earlier_hook(spawner, pod):
        pod.metadata.labels["earlier-hook"] = "ran"
        return pod
    c.KubeSpawner.modify_pod_hook = earlier_hook
elif previous in ("colocate", "colocate-model"):
    # An earlier hook that pins every pod on nebari.dev/colocate-user, in
    # the dict form extra_pod_config gives or as kubernetes models.
    def earlier_hook(spawner, pod):
        v = pod.metadata.labels["hub.jupyter.org/username"]
        pod.metadata.labels["nebari.dev/colocate-user"] = v
        pod.metadata.labels["earlier-hook"] = "ran"
        if previous == "colocate":
            term = {"labelSelector": {"matchLabels": {"nebari.dev/colocate-user": v}}, "topologyKey": "kubernetes.io/hostname"}
            other = {"labelSelector": {"matchLabels": {"team": "a"}}, "topologyKey": "kubernetes.io/hostname"}
            pod.spec.affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term, other]}}
        else:
            ns = types.SimpleNamespace
            term = ns(label_selector=ns(match_expressions=[ns(key="nebari.dev/colocate-user", operator="In", values=[v])], match_labels=None),
                      topology_key="kubernetes.io/hostname")
            pod.spec.affinity = ns(node_affinity="kept", pod_anti_affinity=None,
                                   pod_affinity=ns(required_during_scheduling_ignored_during_execution=[term], preferred_during_scheduling_ignored_during_execution=None))
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
       "hook": "modify_pod_hook" in c.KubeSpawner, "pods": [], "pvc_names": {}, "profiles": {}}
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
    profiles = c.KubeSpawner["profile_list"] if "profile_list" in c.KubeSpawner else []
    if callable(profiles):
        profiles = asyncio.run(profiles(spawner))
        out["settings"]["profile_list"] = "<callable>"
    out["profiles"][p["user"]] = [[x.get("slug"), x.get("display_name"), bool(x.get("default"))] for x in profiles]
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
	Settings map[string]any     `json:"settings"`
	Hook     bool               `json:"hook"`
	PVCNames map[string]string  `json:"pvc_names"`
	Profiles map[string][][]any `json:"profiles"`
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
	prev := "0"
	if previous {
		prev = "1"
	}
	return runPythonWith(t, r, pre, pods, runs, prev)
}

// runPythonWith names the earlier hook: "0" none, "1" one that labels the
// pod, "colocate" / "colocate-model" one that pins every pod on
// nebari.dev/colocate-user (dicts / kubernetes models).
func runPythonWith(t *testing.T, r Result, pre map[string]any, pods []pyPod, runs int, prev string) pyOut {
	t.Helper()
	res, err := runPythonDocs(t, map[string][]byte{DocumentFile: Render(r).Document}, pre, pods, runs, prev)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// runPythonDocs loads the rendered file beside the document files given
// (by name) and returns what the driver printed, or the hub's error.
func runPythonDocs(t *testing.T, docs map[string][]byte, pre map[string]any, pods []pyPod, runs int, prev string) (pyOut, error) {
	t.Helper()
	requireTraitlets(t)
	dir := t.TempDir()
	if pre == nil {
		pre = map[string]any{}
	}
	if pods == nil {
		pods = []pyPod{}
	}
	files := map[string][]byte{
		PythonFile:  []byte(Python()),
		"pre.json":  []byte(JSON(pre)),
		"pods.json": []byte(JSON(pods)),
		"driver.py": []byte(driver),
	}
	for name, content := range docs {
		files[name] = content
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
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
		return pyOut{}, fmt.Errorf("python: %v\n%s", err, stderr)
	}
	var res pyOut
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("driver output: %v\n%s", err, out)
	}
	return res, nil
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

// Lists of named things merge by identity with what earlier configuration
// set, the provider's entries winning in place; an earlier volume on the
// home claim under another name goes with its mounts; dicts merge; the
// earlier form (list or dict) is kept; loading twice changes nothing.
func TestSpawnerPython_composesNamedListsAndDicts(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(RWX), Extra: map[string]any{
		"init_containers": []any{map[string]any{"name": "fix-perms", "image": "busybox:2"}},
		"tolerations":     []any{map[string]any{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}},
		"environment":     map[string]any{"B": "provider"},
		"volumes":         []any{map[string]any{"name": "scratch", "emptyDir": map[string]any{"medium": "Memory"}}},
	}})
	pre := map[string]any{
		"pvc_name_template": "claim-{username}{servername}",
		"volumes": []any{
			map[string]any{"name": "old-home", "persistentVolumeClaim": map[string]any{"claimName": "claim-{username}{servername}"}},
			map[string]any{"name": "shared", "persistentVolumeClaim": map[string]any{"claimName": "shared-storage"}},
			map[string]any{"name": "scratch", "emptyDir": map[string]any{}},
		},
		"volume_mounts": []any{
			map[string]any{"name": "old-home", "mountPath": "/home/jovyan"},
			map[string]any{"name": "old-home", "mountPath": "/home/old", "subPath": "x"},
			map[string]any{"name": "shared", "mountPath": "/shared"},
		},
		"init_containers": []any{map[string]any{"name": "fix-perms", "image": "busybox:1"}, map[string]any{"name": "install-nebi"}},
		"tolerations":     []any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, map[string]any{"key": "spot", "operator": "Exists"}},
		"environment":     map[string]any{"A": "earlier", "B": "earlier"},
	}
	for _, runs := range []int{1, 2} {
		got := runPython(t, r, pre, nil, runs, false).Settings
		want := map[string]string{
			"volumes":         `[{"name":"shared","persistentVolumeClaim":{"claimName":"shared-storage"}},{"emptyDir":{"medium":"Memory"},"name":"scratch"},{"name":"home","persistentVolumeClaim":{"claimName":"{pvc_name}"}}]`,
			"volume_mounts":   `[{"mountPath":"/home/jovyan","name":"home"},{"mountPath":"/shared","name":"shared"}]`,
			"init_containers": `[{"image":"busybox:2","name":"fix-perms"},{"name":"install-nebi"}]`,
			"tolerations":     `[{"effect":"NoSchedule","key":"gpu","operator":"Equal","value":"yes"},{"key":"spot","operator":"Exists"}]`,
			"environment":     `{"A":"earlier","B":"provider"}`,
		}
		for k, w := range want {
			if g := JSON(got[k]); g != w {
				t.Errorf("runs=%d %s\n got: %s\nwant: %s", runs, k, g, w)
			}
		}
	}
	// z2jh's dict form stays a dict: its home volume (on the same claim)
	// and that volume's mount give way, the deployer's entries stay.
	pre = map[string]any{
		"pvc_name_template": "claim-{username}",
		"volumes": map[string]any{
			"volume-{user_server}": map[string]any{"name": "volume-{user_server}", "persistentVolumeClaim": map[string]any{"claimName": "claim-{username}"}},
			"data":                 map[string]any{"name": "data", "nfs": map[string]any{"server": "nfs", "path": "/"}},
		},
		"volume_mounts": map[string]any{
			"volume-{user_server}": map[string]any{"name": "volume-{user_server}", "mountPath": "/home/jovyan"},
			"0-data":               map[string]any{"name": "data", "mountPath": "/data"},
		},
	}
	got := runPython(t, mustBuild(t, Config{Home: homeSettings(RWX)}), pre, nil, 2, false).Settings
	if g, w := JSON(got["volumes"]), `{"data":{"name":"data","nfs":{"path":"/","server":"nfs"}},"home":{"name":"home","persistentVolumeClaim":{"claimName":"{pvc_name}"}}}`; g != w {
		t.Errorf("dict volumes\n got: %s\nwant: %s", g, w)
	}
	if g, w := JSON(got["volume_mounts"]), `{"0-data":{"mountPath":"/data","name":"data"},"home":{"mountPath":"/home/jovyan","name":"home"}}`; g != w {
		t.Errorf("dict volume_mounts\n got: %s\nwant: %s", g, w)
	}
}

// Profiles compose with an earlier static list (a provider profile takes
// the place of the earlier one with its slug; a provider default takes the
// default) and with a per-user callable, whose gating stays: the earlier
// profile only alice may see stays hers. Loading twice wraps once.
func TestSpawnerPython_composesProfiles(t *testing.T) {
	small := Profile{Slug: "small", DisplayName: "Small (provider)"}.Dict()
	gpu := Profile{Slug: "gpu", DisplayName: "GPU (provider)", Default: true}.Dict()
	r := mustBuild(t, Config{Home: homeSettings(RWX), Profiles: []map[string]any{small, gpu}})
	pods := []pyPod{{User: "alice", Labels: map[string]string{}}, {User: "bob", Labels: map[string]string{}}}
	static := map[string]any{"profile_list": []any{
		map[string]any{"slug": "small", "display_name": "Small (earlier)"},
		map[string]any{"slug": "big", "display_name": "Big", "default": true},
	}}
	want := `[["small","Small (provider)",false],["big","Big",false],["gpu","GPU (provider)",true]]`
	for _, runs := range []int{1, 2} {
		got := runPython(t, r, static, pods[:1], runs, false)
		if g := JSON(got.Profiles["alice"]); g != want {
			t.Errorf("runs=%d static list\n got: %s\nwant: %s", runs, g, want)
		}
		got = runPython(t, r, map[string]any{"earlier_profile_callable": []any{
			map[string]any{"slug": "small", "display_name": "Small (earlier)"},
			map[string]any{"slug": "alices", "display_name": "Alice's", "only": []any{"alice"}},
		}}, pods, runs, false)
		if g, w := JSON(got.Profiles["alice"]), `[["small","Small (provider)",false],["alices","Alice's",false],["gpu","GPU (provider)",true]]`; g != w {
			t.Errorf("runs=%d callable, alice\n got: %s\nwant: %s", runs, g, w)
		}
		if g, w := JSON(got.Profiles["bob"]), `[["small","Small (provider)",false],["gpu","GPU (provider)",true]]`; g != w {
			t.Errorf("runs=%d callable, bob\n got: %s\nwant: %s", runs, g, w)
		}
	}
}

// An earlier modify_pod_hook that pins every pod on the co-location label
// (as dicts or as kubernetes models) no longer pins anyone under
// ReadWriteMany, and only the legacy users with one term of the
// provider's; the hook's other changes stay.
func TestSpawnerPython_earlierHookColocation(t *testing.T) {
	const label = "nebari.dev/colocate-user"
	pods := []pyPod{
		{User: "alice", Labels: map[string]string{"hub.jupyter.org/username": "alice"}},
		{User: "bob", Labels: map[string]string{"hub.jupyter.org/username": "bob"}},
	}
	other := map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}}, "topologyKey": "kubernetes.io/hostname"}
	for _, prev := range []string{"colocate", "colocate-model"} {
		none := runPythonWith(t, mustBuild(t, Config{Home: homeSettings(RWX), ColocationLabel: label}), nil, pods, 2, prev)
		for _, p := range none.Pods {
			if _, ok := p.Labels[label]; ok || p.Labels["earlier-hook"] != "ran" {
				t.Errorf("%s, none: labels %v", prev, p.Labels)
			}
			if prev == "colocate" && JSON(p.Affinity) != JSON(map[string]any{"podAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{other}}}) {
				t.Errorf("%s, none: affinity %s", prev, JSON(p.Affinity))
			}
			if prev == "colocate-model" && JSON(p.Affinity) != `{"node_affinity":"kept","pod_affinity":{"preferred_during_scheduling_ignored_during_execution":null,"required_during_scheduling_ignored_during_execution":null},"pod_anti_affinity":null}` {
				t.Errorf("%s, none: affinity %s", prev, JSON(p.Affinity))
			}
		}
		legacy := runPythonWith(t, mustBuild(t, Config{Home: homeSettings(RWX), ColocationLabel: label, LegacyUsers: []string{"alice"}}), nil, pods, 2, prev)
		alice, bob := legacy.Pods[0], legacy.Pods[1]
		if alice.Labels[label] != "alice" || !strings.Contains(JSON(alice.Affinity), JSON(colocationTerm(label, "alice"))) || strings.Count(JSON(alice.Affinity), label) != 1 {
			t.Errorf("%s, legacy alice: %v %s", prev, alice.Labels, JSON(alice.Affinity))
		}
		if _, ok := bob.Labels[label]; ok || strings.Contains(JSON(bob.Affinity), label) {
			t.Errorf("%s, legacy bob pinned: %v %s", prev, bob.Labels, JSON(bob.Affinity))
		}
	}
}
