package provider

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	pschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/spawner"
)

// The examples under examples/spawner are planned and applied here as
// written, read in place: terraform.tf (the required providers), main.tf
// (the provider's resources) and helm.tf (the chart release,
// hashicorp/helm). hashicorp/helm cannot be installed here, and the test
// does not pretend to run it: helm.tf's helm_release becomes OpenTofu's own
// terraform_data whose input is the release's arguments, the same
// expressions (helmRelease), and helm's provider block and requirement go.
// What else the test changes is listed in exampleCase.edits: the namespace
// (a fresh one per test); the provider block is the test bed's, in place of
// z2jh's provider.tf. Then it
// does what `helm upgrade` does with the release OpenTofu applied: renders
// the chart with the release's values list, in order, and submits every
// object to the API server (server-side dry run); loads the hub from those
// values as the chart does and spawns a legacy and a new user with real
// KubeSpawner, whose claims and pods the API server accepts too. A user's
// ReadWriteOnce claim appearing then changes only legacy_users: the next
// apply changes the hub pod template, so helm upgrade restarts the hub.

// edit replaces old with new in a file, which must hold old exactly n times.
type edit struct {
	old, new string
	n        int
}

type exampleCase struct {
	dir      string            // examples/spawner/<dir>
	files    []string          // the files OpenTofu reads, in the order given
	skipped  map[string]string // files not read, and why
	edits    map[string][]edit // per file; "NS" in new is the test's namespace
	release  string            // the address of the release's stand-in (terraform_data, see helmRelease)
	chart    string            // its chart
	subchart string            // the key the z2jh values sit under, "" for the z2jh chart itself
	class    string            // the home storage's class
	label    string            // the co-location label
	small    string            // a profile slug of the example
	gpu      string            // its GPU profile's slug
	auth     map[string]any    // the users' auth state
	configD  func(t *testing.T, dir string)
	podVols  []string // volumes the hub's own configuration gives every pod
}

func exampleCases() map[string]exampleCase {
	helmSource := edit{`    helm    = { source = "hashicorp/helm" }` + "\n", "", 1}
	return map[string]exampleCase{
		"z2jh": {
			dir: "z2jh", files: []string{"terraform.tf", "main.tf", "helm.tf"},
			skipped: map[string]string{"provider.tf": "the provider block; the test bed's is used (TestExamplesSpawner_providerBlocks checks it)"},
			edits: map[string][]edit{
				"terraform.tf": {helmSource},
				"main.tf":      {{`"jhub"`, `"NS"`, 2}},
				"helm.tf":      {{`"jhub"`, `"NS"`, 1}},
			},
			release: "terraform_data.jupyterhub", chart: "jupyterhub", class: "efs",
			label: spawner.DefaultColocationLabel, small: "small", gpu: "gpu",
			configD: func(*testing.T, string) {},
		},
		"nebari": {
			dir: "nebari", files: []string{"terraform.tf", "main.tf", "helm.tf"},
			edits: map[string][]edit{
				"terraform.tf": {helmSource},
				"main.tf":      {{`namespace = "nebari"`, `namespace = "NS"`, 1}},
			},
			release: "terraform_data.data_science_pack", chart: "nebari-data-science-pack", subchart: "jupyterhub", class: "longhorn",
			label: "nebari.dev/colocate-user", small: "small-instance", gpu: "gpu-instance",
			auth:    map[string]any{"groups": []any{"/data-team"}},
			configD: func(t *testing.T, dir string) { hubtest.PackConfigD(t, dir) },
			podVols: []string{"shared", "nebi-bin", "nebi-config"},
		},
	}
}

// config is the example's configuration as the test applies it.
func (e exampleCase) config(t *testing.T, ns string) string {
	t.Helper()
	dir := filepath.Join(hubtest.RepoRoot(t), "examples", "spawner", e.dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range entries {
		if _, skipped := e.skipped[f.Name()]; !slices.Contains(e.files, f.Name()) && !skipped {
			t.Fatalf("%s/%s is neither read nor skipped by this test", dir, f.Name())
		}
	}
	c := acctest.Cluster(t)
	out := acctest.ProviderBlock(c, c.AdminToken)
	for _, name := range e.files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, ed := range e.edits[name] {
			if got := strings.Count(text, ed.old); got != ed.n {
				t.Fatalf("%s/%s holds %q %d times, the test expects %d: update the test's edits", dir, name, ed.old, got, ed.n)
			}
			text = strings.ReplaceAll(text, ed.old, strings.ReplaceAll(ed.new, "NS", ns))
		}
		if name == "helm.tf" {
			text = helmRelease(t, text)
		}
		out += "\n# " + name + "\n" + text
	}
	return out
}

// helmRelease turns helm.tf into what OpenTofu can apply here: each
// helm_release becomes a terraform_data (OpenTofu's own) whose input holds
// the release's arguments as written, the same expressions, evaluated by
// OpenTofu, and an output helm_release_<name> carries them to the test;
// helm's provider block goes. A release with a nested block (set, ...)
// fails the test: it would need rendering too.
func helmRelease(t *testing.T, text string) string {
	t.Helper()
	f, diags := hclwrite.ParseConfig([]byte(text), "helm.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("helm.tf: %v", diags)
	}
	body := f.Body()
	releases := 0
	for _, b := range body.Blocks() {
		switch {
		case b.Type() == "provider" && b.Labels()[0] == "helm":
			body.RemoveBlock(b)
		case b.Type() == "resource" && b.Labels()[0] == "helm_release":
			if len(b.Body().Blocks()) > 0 {
				t.Fatalf("helm_release.%s has nested blocks; the test renders only its arguments", b.Labels()[1])
			}
			var fields []hclwrite.ObjectAttrTokens
			for _, k := range slices.Sorted(maps.Keys(b.Body().Attributes())) {
				fields = append(fields, hclwrite.ObjectAttrTokens{Name: hclwrite.TokensForIdentifier(k), Value: b.Body().Attributes()[k].Expr().BuildTokens(nil)})
			}
			name := b.Labels()[1]
			body.RemoveBlock(b)
			data := body.AppendNewBlock("resource", []string{"terraform_data", name}).Body()
			data.SetAttributeRaw("input", hclwrite.TokensForObject(fields))
			body.AppendNewBlock("output", []string{"helm_release_" + name}).Body().
				SetAttributeTraversal("value", hcl.Traversal{hcl.TraverseRoot{Name: "terraform_data"}, hcl.TraverseAttr{Name: name}, hcl.TraverseAttr{Name: "output"}})
			releases++
		default:
			t.Fatalf("helm.tf holds a %s %v the test does not know", b.Type(), b.Labels())
		}
	}
	if releases != 1 {
		t.Fatalf("helm.tf holds %d helm_release, the test expects 1", releases)
	}
	return string(f.Bytes())
}

// releaseArgs flattens a release's arguments, as its output carries them,
// into "chart", "values.#", "values.0", ...: string arguments and the list
// of values, which is all a release of the examples sets.
func releaseArgs(t *testing.T, v any) map[string]string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("the release's arguments are %T, not an object", v)
	}
	out := map[string]string{}
	for k, x := range m {
		switch x := x.(type) {
		case string:
			out[k] = x
		case []any:
			out[k+".#"] = strconv.Itoa(len(x))
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					t.Fatalf("the release's %s[%d] is %T, not a string", k, i, e)
				}
				out[k+"."+strconv.Itoa(i)] = s
			}
		default:
			t.Fatalf("the release's %s is %T; the test knows strings and lists of strings", k, x)
		}
	}
	return out
}

// exampleFactories serve the provider.
func exampleFactories() map[string]func() (tfprotov6.ProviderServer, error) {
	return factories(Options{})
}

// rendering is the chart as helm upgrade renders the applied release.
type rendering struct {
	objects map[string]map[string]any
	hub     map[string]any // the hub Deployment's pod template
	values  map[string]any // the z2jh values the hub reads (chart defaults merged)
}

// generatedSecrets is a values file with the secrets the chart generates
// when nothing sets them. helm upgrade reads them back from the live hub
// Secret (lookup); helm template, without a cluster, would draw new ones
// each time and change checksum/secret.
func generatedSecrets(values map[string]any) string {
	services := map[string]any{}
	if s, ok := hubtest.Dig(values, "hub.services").(map[string]any); ok {
		for k := range s {
			services[k] = map[string]any{"apiToken": strings.Repeat("c", 64)}
		}
	}
	b, _ := yaml.Marshal(map[string]any{"hub": map[string]any{
		"services": services,
		"config": map[string]any{
			"ConfigurableHTTPProxy": map[string]any{"auth_token": strings.Repeat("a", 64)},
			"JupyterHub":            map[string]any{"cookie_secret": strings.Repeat("0", 64)},
			"CryptKeeper":           map[string]any{"keys": []any{strings.Repeat("1", 64)}},
		},
	}})
	return string(b)
}

// render does what helm upgrade does with the release in the state: the
// z2jh chart (for the pack, as its subchart: the pack's jupyterhub: values,
// then each values file's jupyterhub:) with the release's values in order.
func (e exampleCase) render(t *testing.T, s *terraform.State, chart string) rendering {
	t.Helper()
	out, ok := s.RootModule().Outputs["helm_release_"+strings.TrimPrefix(e.release, "terraform_data.")]
	if !ok {
		t.Fatalf("no release %s in the outputs", e.release)
	}
	a := releaseArgs(t, out.Value)
	if a["chart"] != e.chart {
		t.Fatalf("%s installs chart %q, the test renders %q", e.release, a["chart"], e.chart)
	}
	var docs []string
	if e.subchart != "" {
		b, err := yaml.Marshal(hubtest.PackSubchartValues(t))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	n, err := strconv.Atoi(a["values.#"])
	if err != nil || n == 0 {
		t.Fatalf("%s has no values: %q", e.release, a["values.#"])
	}
	for i := range n {
		text := a["values."+strconv.Itoa(i)]
		var v map[string]any
		if err := yaml.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s values[%d] is not YAML: %v", e.release, i, err)
		}
		if e.subchart != "" {
			if len(v) != 1 || v[e.subchart] == nil {
				t.Fatalf("%s values[%d] sets %v, the test renders only %s:", e.release, i, hubtest.SortedKeys(v), e.subchart)
			}
			v = v[e.subchart].(map[string]any)
		}
		b, err := yaml.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	values := hubtest.Z2jhValues(t)
	for _, d := range docs {
		var v map[string]any
		if err := yaml.Unmarshal([]byte(d), &v); err != nil {
			t.Fatal(err)
		}
		values = hubtest.MergeValues(values, v)
	}
	docs = append(docs, generatedSecrets(values))
	objects := hubtest.HelmTemplateFiles(t, chart, a["name"], a["namespace"], docs...)
	var hub map[string]any
	for _, key := range hubtest.SortedKeys(objects) {
		o := objects[key]
		if o["kind"] == "Deployment" && hubtest.Dig(o, "metadata.labels.component") == "hub" {
			hub, _ = hubtest.Dig(o, "spec.template").(map[string]any)
		}
	}
	if hub == nil {
		t.Fatalf("no hub Deployment among %v", hubtest.SortedKeys(objects))
	}
	return rendering{objects: objects, hub: hub, values: values}
}

// spawn loads the hub from r and spawns the users, the hub asking the test
// bed's API server as hub says; users whose claim is ReadWriteOnce
// (legacy) are pinned.
func (e exampleCase) spawn(t *testing.T, r rendering, hub hubtest.HubAPI, legacy []string, users []hubtest.HubUser) {
	t.Helper()
	configD := t.TempDir()
	e.configD(t, configD)
	got := hubtest.RunHub(t, hub, r.values, configD, spawner.FilesDir, users)
	for _, u := range users {
		s, ok := got[u.Name]
		if !ok {
			t.Fatalf("no spawn of %s", u.Name)
		}
		where := fmt.Sprintf("%s on %s", u.Name, u.Profile)
		if !slices.Contains(s.Offered, u.Profile) {
			t.Errorf("%s: %s is not offered: %v", where, u.Profile, s.Offered)
		}
		claim := "claim-" + u.Name
		if s.PVCName != claim || hubtest.Dig(s.PVC, "spec.storageClassName") != e.class || spawner.JSON(hubtest.Dig(s.PVC, "spec.accessModes")) != `["ReadWriteMany"]` {
			t.Errorf("%s: KubeSpawner ensures claim %s of class %v, modes %v; want %s, %s, ReadWriteMany",
				where, s.PVCName, hubtest.Dig(s.PVC, "spec.storageClassName"), hubtest.Dig(s.PVC, "spec.accessModes"), claim, e.class)
		}
		f := hubtest.FactsOf(t, s.Pod)
		if f.Mounts["/home/jovyan"] != "home" || hubtest.Dig(f.Volumes["home"], "persistentVolumeClaim.claimName") != claim {
			t.Errorf("%s: /home/jovyan mounts %q, home volume %v; want claim %s", where, f.Mounts["/home/jovyan"], f.Volumes["home"], claim)
		}
		terms := f.ColocationTerms(e.label)
		if slices.Contains(legacy, u.Name) {
			if f.Labels[e.label] != u.Name || spawner.JSON(terms) != spawner.JSON([]string{spawner.JSON([]string{u.Name})}) {
				t.Errorf("%s (legacy) is not pinned on %s: label %q, terms %v", where, e.label, f.Labels[e.label], terms)
			}
		} else if _, ok := f.Labels[e.label]; ok || len(terms) > 0 {
			t.Errorf("%s (ReadWriteMany home) is pinned: label %q, terms %v", where, f.Labels[e.label], terms)
		}
		limits, _ := hubtest.Dig(hubtest.List(hubtest.Dig(s.Pod, "spec.containers"))[0], "resources.limits").(map[string]any)
		if gpu := limits["nvidia.com/gpu"]; (gpu == "1") != (u.Profile == e.gpu) {
			t.Errorf("%s: nvidia.com/gpu limit %v", where, gpu)
		}
		for _, v := range e.podVols {
			if _, ok := f.Volumes[v]; !ok {
				t.Errorf("%s: the hub's own volume %s was dropped: %v", where, v, hubtest.SortedKeys(f.Volumes))
			}
		}
	}
	hubtest.DryRunSpawns(t, hubtest.TestAPIServer(t), got)
}

// legacyUsers is jupyter_home_storage.homes.legacy_users in s.
func legacyUsers(s *terraform.State) string {
	return s.RootModule().Resources["jupyter_home_storage.homes"].Primary.Attributes["legacy_users"]
}

// annotations is a pod template's annotations.
func annotations(tpl map[string]any) map[string]any {
	a, _ := hubtest.Dig(tpl, "metadata.annotations").(map[string]any)
	return a
}

// Each example, applied on the test bed: alice has a ReadWriteOnce claim
// (a legacy user), dave none (a new user); then bob's ReadWriteOnce claim
// appears: only legacy_users (informational) changes, the hub's
// configuration and the release do not, and the hub pins bob at his next
// spawn from his claim.
func TestAccExamples_spawner(t *testing.T) {
	for name, e := range exampleCases() {
		t.Run(name, func(t *testing.T) {
			c := acctest.Cluster(t)
			ns := acctest.Namespace(t)
			chart := hubtest.Z2jhChart(t)
			api := hubtest.TestAPIServer(t)
			cfg := e.config(t, ns)
			rwo := func(user string) acctest.SeedClaim {
				return acctest.SeedClaim{Name: "claim-" + user, Username: user, Modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClass: &e.class}
			}
			// alice's home is a ReadWriteOnce claim from before; dave is new.
			acctest.Seed(t, c.Admin(), ns, rwo("alice"))
			if e.dir == "nebari" {
				// The pack's hook creates each user's workspace claim when
				// missing, ReadWriteOnce by default, which pins the user's
				// pods as a ReadWriteOnce home does; here they are
				// ReadWriteMany already, so that the home alone decides.
				for _, u := range []string{"alice", "bob", "dave"} {
					acctest.Seed(t, c.Admin(), ns, acctest.SeedClaim{Name: "nebi-workspaces-" + u, Modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClass: &e.class})
				}
			}
			hub := hubtest.HubIdentity(t, ns)
			var before rendering
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: exampleFactories(),
				Steps: []resource.TestStep{
					{
						Config: cfg,
						Check: func(s *terraform.State) error {
							if err := acctest.LegacyUsersIs(legacyUsers(s), map[string]string{"alice": "claim-alice"}); err != nil {
								return err
							}
							before = e.render(t, s, chart)
							if n := api.DryRunRendered(t, before.objects); n == 0 {
								return fmt.Errorf("nothing accepted")
							}
							if want := s.RootModule().Resources[configAddr].Primary.Attributes["hub_checksum"]; annotations(before.hub)[spawner.ChecksumAnnotation] != want {
								return fmt.Errorf("the hub pod's %s is %v, want hub_checksum %s", spawner.ChecksumAnnotation, annotations(before.hub)[spawner.ChecksumAnnotation], want)
							}
							if again := e.render(t, s, chart); spawner.JSON(again.hub) != spawner.JSON(before.hub) {
								return fmt.Errorf("the same release rendered another hub pod template: every helm upgrade would restart the hub")
							}
							e.spawn(t, before, hub, []string{"alice"}, []hubtest.HubUser{
								{Name: "alice", Profile: e.small, AuthState: e.auth},
								{Name: "dave", Profile: e.gpu, AuthState: e.auth},
							})
							return nil
						},
					},
					{Config: cfg, PlanOnly: true}, // nothing changed: an empty plan
					{
						// bob's ReadWriteOnce claim appears: the hub's configuration
						// and the release do not change.
						PreConfig: func() { acctest.Seed(t, c.Admin(), ns, rwo("bob")) },
						Config:    cfg,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionNoop),
							plancheck.ExpectResourceAction(e.release, plancheck.ResourceActionNoop),
						}},
						Check: func(s *terraform.State) error {
							if err := acctest.LegacyUsersIs(legacyUsers(s), map[string]string{"alice": "claim-alice", "bob": "claim-bob"}); err != nil {
								return err
							}
							after := e.render(t, s, chart)
							api.DryRunRendered(t, after.objects)
							if spawner.JSON(before.hub) != spawner.JSON(after.hub) {
								t.Errorf("a new ReadWriteOnce claim changed the hub pod template: helm upgrade would restart the hub")
							}
							e.spawn(t, after, hub, []string{"alice", "bob"}, []hubtest.HubUser{
								{Name: "bob", Profile: e.small, AuthState: e.auth},
								{Name: "dave", Profile: e.small, AuthState: e.auth},
							})
							return nil
						},
					},
				},
			})
		})
	}
}

// The provider blocks the examples leave to the user (z2jh's provider.tf,
// which the acceptance test replaces with the test bed's) set only
// settings the provider's schema has, with values of their type: every
// file of examples/spawner is then read by OpenTofu or checked here.
func TestExamplesSpawner_providerBlocks(t *testing.T) {
	attrs := providerSchema().Attributes
	checked := 0
	for name, e := range exampleCases() {
		for file := range e.skipped {
			path := filepath.Join(hubtest.RepoRoot(t), "examples", "spawner", e.dir, file)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("%s: %s", name, diags)
			}
			body := f.Body.(*hclsyntax.Body)
			if len(body.Attributes) != 0 || len(body.Blocks) != 1 || body.Blocks[0].Type != "provider" || body.Blocks[0].Labels[0] != "jupyter" {
				t.Fatalf("%s: %s must hold only the jupyter provider block", name, path)
			}
			block := body.Blocks[0].Body
			if len(block.Blocks) != 0 || len(block.Attributes) == 0 {
				t.Errorf("%s: the provider block has nested blocks or no settings", path)
			}
			for key, a := range block.Attributes {
				def, ok := attrs[key]
				if !ok {
					t.Errorf("%s: the provider has no setting %q", path, key)
					continue
				}
				v, diags := a.Expr.Value(nil)
				if diags.HasErrors() {
					t.Errorf("%s: %s: %s", path, key, diags)
					continue
				}
				if _, isString := def.(pschema.StringAttribute); isString != (v.Type() == cty.String) {
					t.Errorf("%s: %s = %s, the provider's setting is %T", path, key, v.GoString(), def)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Error("no provider block checked")
	}
}
