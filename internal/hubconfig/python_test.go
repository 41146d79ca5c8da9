package hubconfig

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// python is Debian's interpreter, which python3-traitlets installs into.
const python = "/usr/bin/python3"

// driver loads the rendered file the way JupyterHub loads a config file:
// c is a traitlets Config and the file runs with c in scope. pre.json holds
// settings earlier configuration made (a chart's own file); pods.json holds
// pods to run the hooks on, each with the access modes of the claim its
// server mounts as the API answers the hooks (a claim that does not exist
// without); python_spawn_test.go asks the test bed's API server instead. It
// prints c.KubeSpawner, the claims the servers mount and the hooked pods.
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
if previous in ("1", "spawner-class"):
    def earlier_hook(spawner, pod):
        pod.metadata.labels["earlier-hook"] = "ran"
        return pod
    if previous == "1":
        c.KubeSpawner.modify_pod_hook = earlier_hook
    else:  # on Spawner, as JupyterHub's documentation shows hooks
        c.Spawner.modify_pod_hook = earlier_hook
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
class NotFound(Exception):
    status = 404


class Claims:
    # What the API server answers the hooks: the server's claim, in the
    # access modes given, or none (then no copy of it either).
    def __init__(self, modes):
        self.modes = modes

    async def read_namespaced_persistent_volume_claim(self, name, namespace):
        if self.modes is None:
            raise NotFound()
        ns = types.SimpleNamespace
        return ns(metadata=ns(name=name, uid="uid-" + name, annotations={}, deletion_timestamp=None),
                  spec=ns(access_modes=self.modes), status=ns(phase="Bound"))

    async def list_namespaced_persistent_volume_claim(self, namespace, **kwargs):
        return types.SimpleNamespace(items=[])


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
                                spec=types.SimpleNamespace(affinity=affinity, containers=[], volumes=[]))
    modes = c.KubeSpawner["storage_access_modes"] if "storage_access_modes" in c.KubeSpawner else ["ReadWriteOnce"]
    spawner = types.SimpleNamespace(user=types.SimpleNamespace(name=p["user"]), pvc_name="remembered-" + p["user"],
                                    namespace="jhub", api=Claims(p.get("modes")), storage_access_modes=modes,
                                    pvc_name_template="claim-{username}",
                                    _expand_user_properties=lambda t, u=p["user"]: t.replace("{username}", u))
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
	// Modes are the access modes of the claim the server mounts; nil: no
	// claim exists (KubeSpawner creates one in the configured mode).
	Modes []string `json:"modes,omitempty"`
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
// pod ("spawner-class": the same, set on c.Spawner), "colocate" / "colocate-model" one that pins every pod on
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

func mustBuild(t testing.TB, c Config) Result {
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
		"rwo":       {Home: homeSettings(claims.RWO), Profiles: []map[string]any{gpuProfileDict()}},
		"rwx":       {Home: homeSettings(claims.RWX), Extra: map[string]any{"start_timeout": 600.0, "extra_labels": map[string]any{"team": "a"}}},
		"rwx_label": {Home: homeSettings(claims.RWX), ColocationLabel: "nebari.dev/colocate-user"},
		"unicode":   {Home: homeSettings(claims.RWX), Extra: map[string]any{"environment": map[string]any{"GREETING": "héllo \"quoted\" \\ back"}}},
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
			if !got.Hook {
				t.Fatalf("no modify_pod_hook in mode %s: co-location is decided at each spawn", r.Colocation.Mode)
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

// Under ReadWriteMany homes, a server whose claim is still ReadWriteOnce
// (a home kept or not yet migrated) gets the label and the required
// affinity with the same label-safe value; a server on a ReadWriteMany
// claim, or on none yet (KubeSpawner creates it ReadWriteMany), is
// unchanged.
func TestSpawnerPython_hookByClaim(t *testing.T) {
	const email = "T.Potts@OpenTeams.com"
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX)})
	value, _ := kubespawner.UsernameLabel(email)
	if value == "" || !kubespawner.IsValidLabelValue(value) {
		t.Fatalf("label value %q", value)
	}
	got := runPython(t, r, nil, []pyPod{
		{User: email, Labels: map[string]string{"hub.jupyter.org/username": value}, Modes: []string{claims.RWO}},
		{User: "bob", Labels: map[string]string{"hub.jupyter.org/username": "bob"}, Modes: []string{claims.RWX}},
		{User: "carol", Labels: map[string]string{"hub.jupyter.org/username": "carol"}, Model: true, Modes: []string{claims.RWOP}},
		{User: "dora", Labels: map[string]string{"hub.jupyter.org/username": "dora"}},
	}, 1, false)
	legacy, migrated, model, created := got.Pods[0], got.Pods[1], got.Pods[2], got.Pods[3]
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
	if _, ok := created.Labels[DefaultColocationLabel]; ok || created.Affinity != nil {
		t.Errorf("a new user's pod was changed: %v %v", created.Labels, created.Affinity)
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
	r := mustBuild(t, Config{Home: homeSettings(claims.RWO), ColocationLabel: "nebari.dev/colocate-user"})
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
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX), ColocationLabel: "nebari.dev/colocate-user"})
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
	if got.Pods[0].Affinity != nil || len(got.Pods[0].Labels) != 1 {
		t.Errorf("a pod was pinned under ReadWriteMany: %+v", got.Pods[0])
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

// Lists of named things merge by identity with what earlier configuration
// set, the provider's entries winning in place; an earlier volume on the
// home claim under another name goes with its mounts; dicts merge; the
// earlier form (list or dict) is kept; loading twice changes nothing.
func TestSpawnerPython_composesNamedListsAndDicts(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX), Extra: map[string]any{
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
	got := runPython(t, mustBuild(t, Config{Home: homeSettings(claims.RWX)}), pre, nil, 2, false).Settings
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
	r := mustBuild(t, Config{Home: homeSettings(claims.RWX), Profiles: []map[string]any{small, gpu}})
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
		{User: "alice", Labels: map[string]string{"hub.jupyter.org/username": "alice"}, Modes: []string{claims.RWX}},
		{User: "bob", Labels: map[string]string{"hub.jupyter.org/username": "bob"}, Modes: []string{claims.RWX}},
	}
	other := map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{"team": "a"}}, "topologyKey": "kubernetes.io/hostname"}
	for _, prev := range []string{"colocate", "colocate-model"} {
		none := runPythonWith(t, mustBuild(t, Config{Home: homeSettings(claims.RWX), ColocationLabel: label}), nil, pods, 2, prev)
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
		pods[0].Modes = []string{claims.RWO} // alice's claim is still ReadWriteOnce
		legacy := runPythonWith(t, mustBuild(t, Config{Home: homeSettings(claims.RWX), ColocationLabel: label}), nil, pods, 2, prev)
		pods[0].Modes = []string{claims.RWX}
		alice, bob := legacy.Pods[0], legacy.Pods[1]
		if alice.Labels[label] != "alice" || !strings.Contains(JSON(alice.Affinity), JSON(colocationTerm(label, "alice"))) || strings.Count(JSON(alice.Affinity), label) != 1 {
			t.Errorf("%s, legacy alice: %v %s", prev, alice.Labels, JSON(alice.Affinity))
		}
		if _, ok := bob.Labels[label]; ok || strings.Contains(JSON(bob.Affinity), label) {
			t.Errorf("%s, legacy bob pinned: %v %s", prev, bob.Labels, JSON(bob.Affinity))
		}
	}
}

// A modify_pod_hook earlier configuration set on c.Spawner (not
// c.KubeSpawner) still runs before the file's own.
func TestSpawnerPython_earlierHookOnSpawner(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(claims.RWO)})
	got := runPythonWith(t, r, nil, []pyPod{{User: "ann", Labels: map[string]string{"hub.jupyter.org/username": "ann"}}}, 2, "spawner-class")
	if p := got.Pods[0]; p.Labels["earlier-hook"] != "ran" || p.Labels[DefaultColocationLabel] != "ann" {
		t.Errorf("labels %v: the earlier hook on c.Spawner did not run, or co-location is missing", p.Labels)
	}
}
