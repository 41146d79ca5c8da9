package hubtest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Python is the interpreter with the Debian packages the hub needs (make pydeps).
const Python = "/usr/bin/python3"

// here is this package's directory.
func here(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate package hubtest")
	}
	return filepath.Dir(file)
}

// RepoRoot is the repository's root (the folder holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir := here(t)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("cannot find the repository root (go.mod) above " + here(t))
		}
		dir = parent
	}
}

// Reference is the path of an upstream file under ../shared/reference/.
func Reference(t testing.TB, parts ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{RepoRoot(t), "..", "shared", "reference"}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("upstream source %s is needed (see upstream-sources.md): %v", p, err)
	}
	return p
}

// ReadRef is the text of an upstream file.
func ReadRef(t testing.TB, parts ...string) string {
	t.Helper()
	b, err := os.ReadFile(Reference(t, parts...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// YAMLRef is an upstream YAML file, parsed.
func YAMLRef(t testing.TB, parts ...string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(ReadRef(t, parts...)), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// MergeValues merges src into dst as Helm merges values files: maps merge
// key by key, anything else (lists included) is replaced.
func MergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = MergeValues(dm, sm)
				continue
			}
			dst[k] = MergeValues(map[string]any{}, sm)
			continue
		}
		dst[k] = v
	}
	return dst
}

// Z2jhValues are the chart's defaults as the hub Secret carries them.
func Z2jhValues(t testing.TB) map[string]any {
	v := YAMLRef(t, "z2jh", "chart", "values.yaml")
	v["Chart"] = map[string]any{"Name": "jupyterhub", "Version": "4.4.0"}
	v["Release"] = map[string]any{"Name": "hub", "Namespace": "jupyter"}
	return v
}

// PackConfigD writes the data-science-pack's jupyterhub_config.d files as
// its templates/hub-config.yaml renders them: 00-chart-derived.py from the
// template (its Helm expressions given test values), the others from
// config/jupyterhub/ with the placeholders the template replaces.
func PackConfigD(t testing.TB, dir string) {
	t.Helper()
	tpl := ReadRef(t, "nebari-data-science-pack", "templates", "hub-config.yaml")
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
		files[name] = ReadRef(t, "nebari-data-science-pack", "config", "jupyterhub", name)
	}
	files["01-spawner.py"] = strings.NewReplacer("__SINGLEUSER_CONFIG_CM__", "nebari-data-science-pack-singleuser-config",
		"__NEBI_CONFIG_CM__", "nebari-data-science-pack-nebi-config").Replace(files["01-spawner.py"])
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// HubUser is a user the hub spawns a server for.
type HubUser struct {
	Name      string         `json:"name"`
	AuthState map[string]any `json:"auth_state,omitempty"`
	Profile   string         `json:"profile,omitempty"`
	ID        string         `json:"id,omitempty"` // the key of the result, default Name
	// Server is the named server's name ("" for the default server).
	Server string `json:"server,omitempty"`
	// State is the KubeSpawner state the hub restores before the spawn,
	// e.g. {"pvc_name": ...} under remember_pvc_name.
	State map[string]any `json:"state,omitempty"`
	// Keep keeps the server's spawner object for its next spawn with Keep
	// in a running hub (Hub.Spawn), as JupyterHub keeps a server's spawner
	// across its spawns: what a spawn set on it is there at the next, and
	// State is not loaded again (the server stopped: clear_state).
	Keep bool `json:"keep,omitempty"`
}

// HubSpawn is what KubeSpawner rendered for one spawn.
type HubSpawn struct {
	Offered []string       `json:"offered"`
	Served  []any          `json:"served"`
	PVC     map[string]any `json:"pvc"`
	Pod     map[string]any `json:"pod"`
	PVCName string         `json:"pvc_name"`
	// Refused is what the hub tells the user when a hook refused the
	// spawn (then nothing else is rendered); RefusedLog what it logs.
	Refused    string `json:"refused,omitempty"`
	RefusedLog string `json:"refused_log,omitempty"`
	// HookSeconds and HookRequests are what the pre_spawn_hook and the
	// modify_pod_hook added to the spawn: their time, as the hub measured
	// it, and the API requests they made.
	HookSeconds  float64 `json:"hook_seconds"`
	HookRequests int     `json:"hook_requests"`
}

// PodObject is the pod manifest as client-go's type; a field the type
// does not know is an error (the manifest would lose it).
func (s HubSpawn) PodObject() (*corev1.Pod, error) {
	if s.Pod == nil {
		return nil, fmt.Errorf("no pod was rendered (refused: %q, %s)", s.Refused, s.RefusedLog)
	}
	dec := json.NewDecoder(strings.NewReader(jsonText(s.Pod)))
	dec.DisallowUnknownFields()
	var pod corev1.Pod
	if err := dec.Decode(&pod); err != nil {
		return nil, fmt.Errorf("KubeSpawner's pod manifest: %w", err)
	}
	return &pod, nil
}

// RequireHub fails (never skips) without the Debian packages the driver needs.
func RequireHub(t testing.TB) {
	t.Helper()
	out, err := exec.Command(Python, "-c", "import traitlets, jupyterhub, kubernetes, escapism, slugify, jinja2, yaml, tornado.curl_httpclient").CombinedOutput()
	if err != nil {
		t.Fatalf("%s lacks what the hub needs (%v: %s). Install it: make pydeps", Python, err, out)
	}
}

// RunHub loads the configuration (values rendered by the chart, the
// jupyterhub_config.d files in configD, the files hub.extraFiles mounts in
// filesMount, such as the provider's) and spawns the users. With
// filesMount "" the provider's files are in configD, as a hub mounting
// the ConfigMap into jupyterhub_config.d has them, and paths into
// jupyterhub_config.d in hub.extraConfig point at configD.
//
// The hub's KubeSpawner asks the test bed's API server as api says (its
// hooks read the claims there), in api.Namespace.
func RunHub(t testing.TB, api HubAPI, values map[string]any, configD, filesMount string, users []HubUser) map[string]HubSpawn {
	t.Helper()
	cmd := hubCommand(t, hubRun{api: api, values: values, configD: configD, filesMount: filesMount, users: users})
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("hub: %v\n%s", err, stderr)
	}
	var res map[string]HubSpawn
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("driver output: %v\n%s", err, out)
	}
	return res
}

// Hub is a hub that loaded its configuration once and keeps running:
// Spawn spawns users with that configuration, however the cluster changed
// since, as a running hub does across migrations (no restart, nothing
// rendered again).
type Hub struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
}

// StartHub starts a hub as RunHub loads one (the same arguments, no users
// yet); it stops when the test ends.
func StartHub(t testing.TB, api HubAPI, values map[string]any, configD, filesMount string) *Hub {
	t.Helper()
	h := &Hub{t: t, cmd: hubCommand(t, hubRun{api: api, values: values, configD: configD, filesMount: filesMount, serve: true}), stderr: &lockedBuffer{}}
	h.cmd.Stderr = h.stderr
	in, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.in, h.out = in, bufio.NewReader(out)
	t.Cleanup(h.stop)
	return h
}

// Spawn spawns the users (as RunHub does) in the running hub.
func (h *Hub) Spawn(users []HubUser) (map[string]HubSpawn, error) {
	if _, err := h.in.Write(append([]byte(jsonText(users)), '\n')); err != nil {
		return nil, fmt.Errorf("hub: %w\n%s", err, h.stderr.String())
	}
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("hub: %w\n%s", err, h.stderr.String())
	}
	var res map[string]HubSpawn
	if err := json.Unmarshal(line, &res); err != nil {
		return nil, fmt.Errorf("driver output: %w\n%s", err, line)
	}
	return res, nil
}

func (h *Hub) stop() {
	_ = h.in.Close()
	if err := h.cmd.Wait(); err != nil {
		h.t.Errorf("hub: %v\n%s", err, h.stderr.String())
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// hubRun is what the driver (testdata/hub.py) is asked to do: load the
// configuration (RunHub's arguments) and spawn users, or serve.
type hubRun struct {
	api                 HubAPI
	values              map[string]any
	configD, filesMount string
	users               []HubUser
	// serve asks for a hub that spawns the users of each line of its stdin.
	serve bool
}

// hubCommand writes the driver's input and returns the command that runs
// it (testdata/hub.py).
func hubCommand(t testing.TB, run hubRun) *exec.Cmd {
	t.Helper()
	RequireHub(t)
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	if err := os.MkdirAll(files, 0o700); err != nil {
		t.Fatal(err)
	}
	extra, _ := Dig(run.values, "hub.extraFiles").(map[string]any)
	written := 0
	for _, key := range SortedKeys(extra) {
		f, _ := extra[key].(map[string]any)
		mount, _ := f["mountPath"].(string)
		if run.filesMount == "" || filepath.Dir(mount) != run.filesMount {
			continue
		}
		// The chart puts stringData into the hub Secret as text and
		// binaryData (base64) as the Secret's data, which the file holds
		// decoded.
		data := []byte(Str(f["stringData"]))
		if b64, ok := f["binaryData"].(string); ok {
			var err error
			if data, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b64), "")); err != nil {
				t.Fatalf("hub.extraFiles.%s.binaryData is not base64: %v", key, err)
			}
		}
		if err := os.WriteFile(filepath.Join(files, filepath.Base(mount)), data, 0o600); err != nil {
			t.Fatal(err)
		}
		written++
	}
	if written == 0 && run.filesMount != "" {
		t.Fatalf("hub.extraFiles mounts nothing in %s", run.filesMount)
	}
	in := map[string]any{
		"files_mount":     run.filesMount,
		"z2jh_hub_dir":    Reference(t, "z2jh", "chart", "files", "hub"),
		"kubespawner_dir": Reference(t, "kubespawner"),
		"config_d":        run.configD,
		"files_dir":       files,
		"values":          run.values,
		"users":           run.users,
		"api":             run.api,
		"serve":           run.serve,
	}
	inPath := filepath.Join(dir, "in.json")
	if err := os.WriteFile(inPath, []byte(jsonText(in)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Python, filepath.Join(here(t), "testdata", "hub.py"), inPath)
	cmd.Env = append(os.Environ(), "PYTHONNOUSERSITE=1")
	cmd.Dir = dir
	return cmd
}

// HelmBinary is the test bed's Helm (tools/testbed/build.sh helm).
func HelmBinary(t testing.TB) string {
	t.Helper()
	p, err := HelmPath()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// HelmPath is the test bed's Helm, or an error saying how to build it.
func HelmPath() (string, error) {
	dir := os.Getenv("TESTBED_BIN_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "terraform-provider-jupyter", "testbed")
	}
	p := filepath.Join(dir, "helm")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the test bed's helm is needed (%v): run make testbed", err)
	}
	return p, nil
}

// Z2jhChart is the zero-to-jupyterhub chart from ../shared/reference/ in a
// temporary directory, prepared by PrepareZ2jhChart.
func Z2jhChart(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "jupyterhub")
	if err := PrepareZ2jhChart(Reference(t, "z2jh", "chart"), dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

// PrepareZ2jhChart copies the chart in src (../shared/reference/z2jh/chart)
// to dst, with values.schema.json converted from values.schema.yaml as
// chartpress does at release, so that Helm validates the values against it.
func PrepareZ2jhChart(src, dst string) error {
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(src, "values.schema.yaml"))
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, "values.schema.json"), js, 0o600)
}

// HelmTemplate renders the chart as release hub in namespace jupyter with
// the values, in order, and returns the objects by kind/name.
func HelmTemplate(t testing.TB, chart string, values ...map[string]any) map[string]map[string]any {
	t.Helper()
	args := []string{"template", "hub", chart, "--namespace", "jupyter", "--kube-version", "1.35.0"}
	dir := t.TempDir()
	for i, v := range values {
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, string(rune('a'+i))+".yaml")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", p)
	}
	cmd := exec.Command(HelmBinary(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+dir, "HELM_CONFIG_HOME="+dir, "HELM_DATA_HOME="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	return Manifest(t, string(out))
}

// Manifest is the objects of a manifest as Helm renders it (YAML documents
// separated by ---), by kind/name.
func Manifest(t testing.TB, text string) map[string]map[string]any {
	t.Helper()
	objs := map[string]map[string]any{}
	for _, doc := range strings.Split(text, "\n---") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil || m == nil {
			continue
		}
		key := Str(m["kind"]) + "/" + Str(Dig(m, "metadata.name"))
		if _, dup := objs[key]; dup {
			t.Fatalf("the manifest holds %s twice", key)
		}
		objs[key] = m
	}
	return objs
}

// Dig reads a dotted path of map keys.
func Dig(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, _ := v.(map[string]any)
		v = mm[k]
	}
	return v
}

// List is the maps in a list.
func List(v any) []map[string]any {
	var out []map[string]any
	items, _ := v.([]any)
	for _, x := range items {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// Str is v if a string, else "".
func Str(v any) string { s, _ := v.(string); return s }

// SortedKeys are m's keys, sorted.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// deepCopy copies a JSON-like value through encoding/json.
func deepCopy(m map[string]any) map[string]any {
	var out map[string]any
	if err := json.Unmarshal([]byte(jsonText(m)), &out); err != nil {
		panic(err)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out
}

// jsonText encodes v compactly with sorted keys, as hubconfig.JSON does.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
