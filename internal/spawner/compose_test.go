package spawner

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

// These tests load the hub configuration the way zero-to-jupyterhub's hub
// loads it: the chart's own files/hub/jupyterhub_config.py (which execs the
// jupyterhub_config.d files in sorted order, then hub.extraConfig sorted by
// key) with the values the chart renders, followed by real KubeSpawner
// rendering a user's claim and pod. The upstream files are read in place
// from ../shared/reference/ (upstream-sources.md); testdata/hub.py is the
// driver.

// reference is the path of an upstream file under ../shared/reference/.
func reference(t *testing.T, parts ...string) string {
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
	p := filepath.Join(append([]string{dir, "..", "shared", "reference"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("upstream source %s is needed (see upstream-sources.md): %v", p, err)
	}
	return p
}

func readRef(t *testing.T, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(reference(t, parts...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func yamlRef(t *testing.T, parts ...string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(readRef(t, parts...)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// mergeValues merges src into dst as Helm merges values files: maps merge
// key by key, anything else (lists included) is replaced.
func mergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeValues(dm, sm)
				continue
			}
			dst[k] = mergeValues(map[string]any{}, sm)
			continue
		}
		dst[k] = v
	}
	return dst
}

// z2jhValues are the chart's defaults as the hub Secret carries them.
func z2jhValues(t *testing.T) map[string]any {
	v := yamlRef(t, "z2jh", "chart", "values.yaml")
	v["Chart"] = map[string]any{"Name": "jupyterhub", "Version": "4.4.0"}
	v["Release"] = map[string]any{"Name": "hub", "Namespace": "jupyter"}
	return v
}

// packConfigD writes the data-science-pack's jupyterhub_config.d files as
// its templates/hub-config.yaml renders them: 00-chart-derived.py from the
// template (its Helm expressions given test values), the others from
// config/jupyterhub/ with the placeholders the template replaces.
func packConfigD(t *testing.T, dir string) {
	t.Helper()
	tpl := readRef(t, "nebari-data-science-pack", "templates", "hub-config.yaml")
	start := strings.Index(tpl, "  00-chart-derived.py: |\n")
	end := strings.Index(tpl, "  00-gateway-auth.py: |")
	if start < 0 || end < start {
		t.Fatal("templates/hub-config.yaml no longer renders 00-chart-derived.py before 00-gateway-auth.py")
	}
	var lines []string
	for _, l := range strings.Split(tpl[start:end], "\n")[1:] {
		lines = append(lines, strings.TrimPrefix(l, "    "))
	}
	derived := strings.Join(lines, "\n")
	derived = strings.ReplaceAll(derived, `{{ include "nebari-data-science-pack.nebiImage" . | quote }}`, `"quay.io/nebari/nebi:test"`)
	derived = regexp.MustCompile(`\{\{ ternary "True" "False" [^}]*\}\}`).ReplaceAllString(derived, "True")
	derived = regexp.MustCompile(`\{\{[^}]*\| quote \}\}`).ReplaceAllString(derived, `""`)
	if strings.Contains(derived, "{{") {
		t.Fatalf("00-chart-derived.py has Helm expressions this test does not render:\n%s", derived)
	}
	files := map[string]string{"00-chart-derived.py": derived}
	for _, name := range []string{"00-gateway-auth.py", "01-spawner.py", "02-jhub-apps.py", "03-nebi-envs.py"} {
		files[name] = readRef(t, "nebari-data-science-pack", "config", "jupyterhub", name)
	}
	files["01-spawner.py"] = strings.NewReplacer("__SINGLEUSER_CONFIG_CM__", "nebari-data-science-pack-singleuser-config",
		"__NEBI_CONFIG_CM__", "nebari-data-science-pack-nebi-config").Replace(files["01-spawner.py"])
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

type hubUser struct {
	Name      string         `json:"name"`
	AuthState map[string]any `json:"auth_state,omitempty"`
	Profile   string         `json:"profile,omitempty"`
	ID        string         `json:"id,omitempty"` // the key of the result, default Name
}

type hubSpawn struct {
	Offered []string       `json:"offered"`
	Served  []any          `json:"served"`
	PVC     map[string]any `json:"pvc"`
	Pod     map[string]any `json:"pod"`
	PVCName string         `json:"pvc_name"`
}

// requireHub fails (never skips) without the Debian packages the driver needs.
func requireHub(t *testing.T) {
	t.Helper()
	out, err := exec.Command(python, "-c", "import traitlets, jupyterhub, kubernetes, escapism, slugify, jinja2, yaml, tornado.curl_httpclient").CombinedOutput()
	if err != nil {
		t.Fatalf("%s lacks what the hub needs (%v: %s). Install it: make pydeps", python, err, out)
	}
}

// runHub loads the configuration (values rendered by the chart, the
// jupyterhub_config.d files in configD, the provider's files where
// helm_values' hub.extraFiles put them) and spawns the users.
func runHub(t *testing.T, values map[string]any, configD string, r Result, users []hubUser) map[string]hubSpawn {
	t.Helper()
	requireHub(t)
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		t.Fatal(err)
	}
	extra, _ := dig(values, "hub.extraFiles").(map[string]any)
	for _, key := range []string{ExtraFilePython, ExtraFileJSON} {
		f, _ := extra[key].(map[string]any)
		mount, _ := f["mountPath"].(string)
		if !strings.HasPrefix(mount, FilesDir+"/") {
			t.Fatalf("hub.extraFiles.%s.mountPath = %q, not in %s", key, mount, FilesDir)
		}
		data, _ := f["stringData"].(string)
		if err := os.WriteFile(filepath.Join(files, filepath.Base(mount)), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	in := map[string]any{
		"z2jh_hub_dir":    reference(t, "z2jh", "chart", "files", "hub"),
		"kubespawner_dir": reference(t, "kubespawner"),
		"config_d":        configD,
		"files_dir":       files,
		"values":          values,
		"users":           users,
	}
	inPath := filepath.Join(dir, "in.json")
	if err := os.WriteFile(inPath, []byte(JSON(in)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, filepath.Join("testdata", "hub.py"), inPath)
	cmd.Env = append(os.Environ(), "PYTHONNOUSERSITE=1")
	cmd.Dir = filepath.Dir(inPath)
	wd, _ := os.Getwd()
	cmd.Args[1] = filepath.Join(wd, "testdata", "hub.py")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("hub: %v\n%s", err, stderr)
	}
	var res map[string]hubSpawn
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("driver output: %v\n%s", err, out)
	}
	return res
}

// helmValuesOf renders r's helm_values and reads them back as a values file.
func helmValuesOf(t *testing.T, r Result) map[string]any {
	t.Helper()
	text, err := HelmYAML(HelmValues(r))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func list(v any) []map[string]any {
	var out []map[string]any
	items, _ := v.([]any)
	for _, x := range items {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

// podFacts reads what the assertions need from a pod manifest.
type podFacts struct {
	volumes  map[string]map[string]any
	mounts   map[string]string // mountPath -> volume name, main container
	inits    []string
	labels   map[string]string
	affinity []map[string]any // required pod affinity terms
}

func factsOf(t *testing.T, pod map[string]any) podFacts {
	t.Helper()
	f := podFacts{volumes: map[string]map[string]any{}, mounts: map[string]string{}, labels: map[string]string{}}
	spec, _ := pod["spec"].(map[string]any)
	for _, v := range list(spec["volumes"]) {
		name := str(v["name"])
		if _, dup := f.volumes[name]; dup {
			t.Errorf("volume %q twice: the API server rejects the pod", name)
		}
		f.volumes[name] = v
	}
	containers := list(spec["containers"])
	for i, c := range append(slices.Clone(containers), list(spec["initContainers"])...) {
		seen := map[string]bool{}
		for _, m := range list(c["volumeMounts"]) {
			if _, ok := f.volumes[str(m["name"])]; !ok {
				t.Errorf("container %s mounts volume %q, which the pod lacks: the API server rejects the pod", str(c["name"]), str(m["name"]))
			}
			if seen[str(m["mountPath"])] {
				t.Errorf("container %s mounts %s twice: the API server rejects the pod", str(c["name"]), str(m["mountPath"]))
			}
			seen[str(m["mountPath"])] = true
			if i == 0 {
				f.mounts[str(m["mountPath"])] = str(m["name"])
			}
		}
		if i >= len(containers) {
			f.inits = append(f.inits, str(c["name"]))
		}
	}
	meta, _ := pod["metadata"].(map[string]any)
	for k, v := range meta["labels"].(map[string]any) {
		f.labels[k] = str(v)
	}
	f.affinity = list(dig(spec, "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"))
	return f
}

// colocationTerms are the required pod affinity terms selecting on label.
func (f podFacts) colocationTerms(label string) []string {
	var out []string
	for _, term := range f.affinity {
		for _, e := range list(dig(term, "labelSelector.matchExpressions")) {
			if str(e["key"]) == label {
				out = append(out, JSON(e["values"]))
			}
		}
		if labels, ok := dig(term, "labelSelector.matchLabels").(map[string]any); ok {
			if v, ok := labels[label]; ok {
				out = append(out, JSON(v))
			}
		}
	}
	return out
}

// earlierHook is a hub.extraConfig entry, sorted before the provider's,
// whose modify_pod_hook pins every pod on label, the way a deployment's
// own co-location does.
func earlierHook(label string) string {
	return `
def _earlier_colocation(spawner, pod):
    value = pod.metadata.labels["hub.jupyter.org/username"]
    pod.metadata.labels[` + pyString(label) + `] = value
    term = {"labelSelector": {"matchLabels": {` + pyString(label) + `: value}}, "topologyKey": "kubernetes.io/hostname"}
    if pod.spec.affinity is None:
        pod.spec.affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return pod

c.KubeSpawner.modify_pod_hook = _earlier_colocation
`
}

// The data-science-pack's hub: its values on top of z2jh's, its
// jupyterhub_config.d files, then the provider's helm_values. Homes are
// ReadWriteMany, alice keeps a ReadWriteOnce claim (legacy_users).
func TestSpawnerCompose_nebariDataSciencePack(t *testing.T) {
	const label = "nebari.dev/colocate-user"
	const email = "T.Potts@OpenTeams.com"
	small := Profile{Slug: "small-instance", DisplayName: "Small (provider)"}.Dict()
	// The pack pins the escape scheme (claims named before KubeSpawner 7).
	home := homeSettings(RWX)
	home["slug_scheme"] = string(kubespawner.SchemeEscape)
	r := mustBuild(t, Config{Home: home, LegacyUsers: []string{"alice", email}, ColocationLabel: label,
		Profiles: []map[string]any{small, gpuProfileDict()}})

	pack := yamlRef(t, "nebari-data-science-pack", "values.yaml")
	sub, _ := pack["jupyterhub"].(map[string]any)
	values := mergeValues(z2jhValues(t), sub)
	profiles, _ := dig(values, "custom.profiles").([]any)
	if len(profiles) == 0 || str(profiles[0].(map[string]any)["slug"]) != "small-instance" {
		t.Fatalf("the pack's first profile is no longer small-instance: %v", profiles)
	}
	gated := map[string]any{"slug": "gated-gpu", "display_name": "Gated GPU", "access": "yaml", "groups": []any{"gpu-team"}}
	values["custom"].(map[string]any)["profiles"] = append(profiles, gated)
	values = mergeValues(values, map[string]any{"hub": map[string]any{"extraConfig": map[string]any{"aa-earlier-colocation": earlierHook(label)}}})
	values = mergeValues(values, helmValuesOf(t, r))
	// The pack's own hub volumes survive helm_values (they merge, not replace).
	for _, v := range []string{"custom-config", "oauth-client", "org-ca", "ca-merged"} {
		if !slices.ContainsFunc(list(dig(values, "hub.extraVolumes")), func(m map[string]any) bool { return m["name"] == v }) {
			t.Errorf("hub.extraVolumes lost the pack's %s after merging helm_values", v)
		}
	}

	configD := t.TempDir()
	packConfigD(t, configD)
	got := runHub(t, values, configD, r, []hubUser{
		{Name: "alice", AuthState: map[string]any{"groups": []any{"/gpu-team"}}, Profile: "gpu"},
		{Name: "bob", AuthState: map[string]any{"groups": []any{}}, Profile: "small-instance"},
		{Name: email},
	})
	alice, bob := got["alice"], got["bob"]

	// An email user: the claim KubeSpawner names is the one this provider
	// computes, and label and affinity carry the pod's own label-safe name.
	wantClaim, err := kubespawner.Expand("claim-{username}", email, "", kubespawner.SchemeEscape)
	if err != nil {
		t.Fatal(err)
	}
	if got[email].PVCName != wantClaim {
		t.Errorf("KubeSpawner names %s's claim %q, the provider %q", email, got[email].PVCName, wantClaim)
	}
	fe := factsOf(t, got[email].Pod)
	if v := fe.labels["hub.jupyter.org/username"]; v == "" || fe.labels[label] != v || JSON(fe.colocationTerms(label)) != JSON([]string{JSON([]string{v})}) {
		t.Errorf("%s: username label %q, co-location label %q, terms %v", email, v, fe.labels[label], fe.colocationTerms(label))
	}

	// Profiles: the pack's per-user callable still gates its own; the
	// provider's are offered to everyone; small-instance is the provider's,
	// in the pack's place.
	if want := []string{"small-instance", "medium-instance"}; !slices.Equal(alice.Offered[:2], want) {
		t.Errorf("alice is offered %v, want %v first", alice.Offered, want)
	}
	if !slices.Contains(alice.Offered, "gated-gpu") || slices.Contains(bob.Offered, "gated-gpu") {
		t.Errorf("the pack's gating is lost: alice %v, bob %v", alice.Offered, bob.Offered)
	}
	for _, s := range []*hubSpawn{&alice, &bob} {
		if !slices.Contains(s.Offered, "gpu") || count(s.Offered, "small-instance") != 1 {
			t.Errorf("offered %v: want the provider's gpu and one small-instance", s.Offered)
		}
	}

	for name, s := range map[string]hubSpawn{"alice": alice, "bob": bob} { // escape leaves these names as they are
		if s.PVCName != "claim-"+name || dig(s.PVC, "metadata.name") != "claim-"+name {
			t.Errorf("%s: claim %q / %v, want claim-%s", name, s.PVCName, dig(s.PVC, "metadata.name"), name)
		}
		if modes := JSON(dig(s.PVC, "spec.accessModes")); modes != `["ReadWriteMany"]` {
			t.Errorf("%s: new claims are %s, want ReadWriteMany", name, modes)
		}
		f := factsOf(t, s.Pod)
		if f.mounts["/home/jovyan"] != "home" || dig(f.volumes["home"], "persistentVolumeClaim.claimName") != "claim-"+name {
			t.Errorf("%s: home mount %q volume %v", name, f.mounts["/home/jovyan"], f.volumes["home"])
		}
		for _, v := range []string{"shared", "nebi-bin", "nebi-config", "singleuser-config"} {
			if _, ok := f.volumes[v]; !ok {
				t.Errorf("%s: the pack's volume %s was dropped; volumes %v", name, v, sortedKeys(f.volumes))
			}
		}
		if f.mounts["/usr/local/bin/nebi"] != "nebi-bin" || f.mounts["/etc/nebi/config.yaml"] != "nebi-config" {
			t.Errorf("%s: the pack's mounts were dropped: %v", name, f.mounts)
		}
		if !slices.Contains(f.inits, "install-nebi") || !slices.Contains(f.inits, "block-cloud-metadata") {
			t.Errorf("%s: init containers %v, want the pack's install-nebi and the chart's block-cloud-metadata", name, f.inits)
		}
	}
	fa, fb := factsOf(t, alice.Pod), factsOf(t, bob.Pod)
	if _, ok := fa.volumes["datasets"]; !ok || fa.mounts["/datasets"] != "datasets" {
		t.Errorf("alice's gpu profile volume is missing: %v", fa.mounts)
	}
	if fa.mounts["/shared/gpu-team"] != "shared" || !slices.Contains(fa.inits, "initialize-shared-mounts") {
		t.Errorf("the pack's group mount for alice was dropped by the gpu profile's volumes: %v %v", fa.mounts, fa.inits)
	}
	// Co-location: alice (legacy ReadWriteOnce claim) is pinned with one
	// term; bob is not, although the pack and an earlier hook pin everyone.
	if fa.labels[label] != "alice" || JSON(fa.colocationTerms(label)) != `["[\"alice\"]"]` {
		t.Errorf("alice: label %q terms %v", fa.labels[label], fa.colocationTerms(label))
	}
	if _, ok := fb.labels[label]; ok || len(fb.colocationTerms(label)) > 0 {
		t.Errorf("bob is pinned: label %q terms %v", fb.labels[label], fb.colocationTerms(label))
	}
	// The API server accepts every claim and pod rendered.
	t.Run("dry_run", func(t *testing.T) { dryRunSpawns(t, testAPIServer(t), got) })
}

// A plain zero-to-jupyterhub hub: the chart's own home volume (dict form)
// gives way to the provider's, the deployer's singleuser.storage.extraVolumes
// and static profileList stay, the home is mounted at home_mount_path, and
// under ReadWriteOnce every user's pods are pinned.
func TestSpawnerCompose_z2jh(t *testing.T) {
	r := mustBuild(t, Config{Home: homeSettings(RWO), HomeMountPath: "/home/{username}", Profiles: []map[string]any{gpuProfileDict()}})
	values := mergeValues(z2jhValues(t), map[string]any{"singleuser": map[string]any{
		"storage": map[string]any{
			"extraVolumes":      map[string]any{"scratch": map[string]any{"name": "scratch", "emptyDir": map[string]any{}}},
			"extraVolumeMounts": map[string]any{"scratch": map[string]any{"name": "scratch", "mountPath": "/scratch"}},
		},
		"profileList": []any{map[string]any{"slug": "default", "display_name": "Default", "default": true}},
	}})
	values = mergeValues(values, helmValuesOf(t, r))
	if got := dig(values, "singleuser.storage.homeMountPath"); got != "/home/{username}" {
		t.Errorf("singleuser.storage.homeMountPath = %v, want the home_mount_path", got)
	}
	got := runHub(t, values, t.TempDir(), r, []hubUser{{Name: "bob"}, {Name: "carol", Profile: "gpu"}})
	// The gpu profile serves its own volumes as a plain list.
	if v := JSON(dig(got["bob"].Served[1].(map[string]any), "kubespawner_override.volume_mounts")); !strings.Contains(v, `"mountPath":"/datasets"`) {
		t.Errorf("the gpu profile serves volume_mounts %s", v)
	}
	for _, name := range []string{"bob", "carol"} {
		s := got[name]
		if want := []string{"default", "gpu"}; !slices.Equal(s.Offered, want) {
			t.Errorf("%s is offered %v, want %v", name, s.Offered, want)
		}
		if modes := JSON(dig(s.PVC, "spec.accessModes")); modes != `["ReadWriteOnce"]` || s.PVCName != "claim-"+name {
			t.Errorf("%s: claim %s %s", name, s.PVCName, modes)
		}
		f := factsOf(t, s.Pod)
		if f.mounts["/home/"+name] != "home" || f.mounts["/scratch"] != "scratch" || len(f.mounts) != 2+boolInt(name == "carol") {
			t.Errorf("%s: mounts %v", name, f.mounts)
		}
		var homeVolumes []string
		for n, v := range f.volumes {
			if dig(v, "persistentVolumeClaim.claimName") == "claim-"+name {
				homeVolumes = append(homeVolumes, n)
			}
		}
		if !slices.Equal(homeVolumes, []string{"home"}) {
			t.Errorf("%s: volumes on the home claim %v, want only the provider's", name, homeVolumes)
		}
		if f.labels[DefaultColocationLabel] != name || len(f.colocationTerms(DefaultColocationLabel)) != 1 {
			t.Errorf("%s: not pinned under ReadWriteOnce: %v %v", name, f.labels, f.affinity)
		}
	}
	t.Run("dry_run", func(t *testing.T) { dryRunSpawns(t, testAPIServer(t), got) })
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func count(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
