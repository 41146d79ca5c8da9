package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/zclconf/go-cty/cty"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/spawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// The examples under examples/spawner applied with the real hashicorp/helm
// provider (the test bed's build, installed by the CLI from a mirror:
// acctest) against the test bed: Helm installs the chart, and the test
// reads what it made, the hub Secret and Deployment.
//
// What the test changes in the files, besides the edits of exampleCase
// (the namespace) and the provider blocks, is what the platform gives the
// release here (helmPlatforms): the chart's local directory in place of
// its repository and version, which cannot be fetched; wait = false, as
// the hub's image cannot be pulled; disable_webhooks = true, as the
// chart's hooks (the image puller's Job) pull images too; and the values
// a platform sets for the data-science-pack (set). helm's provider block
// connects to the test bed (z2jh's config_path; the nebari example leaves
// the block to the platform, so the test adds it).

// helmPlatform is what the test bed gives an example's release.
type helmPlatform struct {
	chart func(testing.TB) string // the chart's directory
	set   map[string]string       // values the platform sets (helm_release's set)
	serve func(testing.TB)        // what the cluster serves that the chart needs
}

var helmPlatforms = map[string]helmPlatform{
	"z2jh": {chart: hubtest.Z2jhChart, serve: func(testing.TB) {}},
	"nebari": {
		chart: hubtest.PackChart,
		// Nebari sets these; the pack's keycloak job needs a file its
		// published chart carries and the reference tree does not.
		set:   map[string]string{"keycloak.hostname": "keycloak.example.org", "rbac.bootstrap.enabled": "false"},
		serve: hubtest.NebariAppCRD,
	},
}

// helmConfig is the example's configuration with helm.tf's release as the
// test bed installs it (see above), and the release's address.
func (e exampleCase) helmConfig(t *testing.T, ns string, c *testcluster.Cluster, p helmPlatform) (string, string) {
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
	out := acctest.ProviderBlock(c, c.AdminToken)
	release := ""
	for _, name := range e.files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, ed := range e.edits[name] {
			if ed.old == `    helm    = { source = "hashicorp/helm" }`+"\n" {
				continue // the stand-in's edit: the real provider is required as written
			}
			if got := strings.Count(text, ed.old); got != ed.n {
				t.Fatalf("%s/%s holds %q %d times, the test expects %d: update the test's edits", dir, name, ed.old, got, ed.n)
			}
			text = strings.ReplaceAll(text, ed.old, strings.ReplaceAll(ed.new, "NS", ns))
		}
		if name == "helm.tf" {
			text, release = e.onTestBed(t, text, p.chart(t), c.KubeconfigPath, p.set)
		}
		out += "\n# " + name + "\n" + text
	}
	return out, release
}

// onTestBed points helm.tf's one helm_release at the chart's directory
// with the settings the test bed needs, and helm's provider at the test
// bed's kubeconfig. It returns the file and the release's address.
func (e exampleCase) onTestBed(t *testing.T, text, chart, kubeconfig string, set map[string]string) (string, string) {
	t.Helper()
	f, diags := hclwrite.ParseConfig([]byte(text), "helm.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("helm.tf: %v", diags)
	}
	body := f.Body()
	var provider *hclwrite.Block
	release := ""
	for _, b := range body.Blocks() {
		switch {
		case b.Type() == "provider" && b.Labels()[0] == "helm":
			provider = b
		case b.Type() == "resource" && b.Labels()[0] == "helm_release" && release == "":
			release = "helm_release." + b.Labels()[1]
			r := b.Body()
			if got := strings.TrimSpace(string(r.GetAttribute("chart").Expr().BuildTokens(nil).Bytes())); got != fmt.Sprintf("%q", e.chart) {
				t.Fatalf("%s installs chart %s, the test installs %q from its directory", release, got, e.chart)
			}
			r.SetAttributeValue("chart", cty.StringVal(chart))
			r.RemoveAttribute("repository")
			r.RemoveAttribute("version")
			r.SetAttributeRaw("wait", hclwrite.TokensForIdentifier("false"))
			r.SetAttributeRaw("disable_webhooks", hclwrite.TokensForIdentifier("true"))
			if len(set) > 0 {
				r.SetAttributeRaw("set", setTokens(set))
			}
		default:
			t.Fatalf("helm.tf holds a %s %v the test does not know", b.Type(), b.Labels())
		}
	}
	if release == "" {
		t.Fatal("helm.tf holds no helm_release")
	}
	if provider == nil {
		provider = body.AppendNewBlock("provider", []string{"helm"})
	}
	provider.Body().SetAttributeRaw("kubernetes", hclwrite.TokensForObject([]hclwrite.ObjectAttrTokens{{
		Name: hclwrite.TokensForIdentifier("config_path"), Value: hclwrite.TokensForValue(cty.StringVal(kubeconfig)),
	}}))
	return string(f.Bytes()), release
}

// setTokens is helm_release's set: a list of {name, value}, sorted by name.
func setTokens(set map[string]string) hclwrite.Tokens {
	var items []hclwrite.Tokens
	for _, k := range hubtest.SortedKeys(set) {
		items = append(items, hclwrite.TokensForObject([]hclwrite.ObjectAttrTokens{
			{Name: hclwrite.TokensForIdentifier("name"), Value: hclwrite.TokensForValue(cty.StringVal(k))},
			{Name: hclwrite.TokensForIdentifier("value"), Value: hclwrite.TokensForValue(cty.StringVal(set[k]))},
		}))
	}
	return hclwrite.TokensForTuple(items)
}

// withAttribute is config with the attribute name of resource typ.label
// set to the expression expr.
func withAttribute(t *testing.T, config, typ, label, name, expr string) string {
	t.Helper()
	f, diags := hclwrite.ParseConfig([]byte(config), "config.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("config: %v", diags)
	}
	b := f.Body().FirstMatchingBlock("resource", []string{typ, label})
	if b == nil {
		t.Fatalf("the configuration has no %s.%s", typ, label)
	}
	expression, diags := hclwrite.ParseConfig([]byte("x = "+expr+"\n"), "expr.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %v", expr, diags)
	}
	b.Body().SetAttributeRaw(name, expression.Body().GetAttribute("x").Expr().BuildTokens(nil))
	return string(f.Bytes())
}

// installedHub is what Helm made for the hub in a namespace.
type installedHub struct {
	deployment *appsv1.Deployment
	secret     *corev1.Secret // the hub's Secret, which its "files" volume mounts
	values     map[string]any // the values the hub reads (the Secret's values.yaml)
}

// readHub reads the hub Deployment (label component=hub) and its Secret.
func readHub(t *testing.T, c *testcluster.Cluster, ns string) installedHub {
	t.Helper()
	ctx := context.Background()
	ds, err := c.Admin().AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "component=hub"})
	if err != nil || len(ds.Items) != 1 {
		t.Fatalf("Helm made %d hub Deployments in %s (%v), want 1", len(ds.Items), ns, err)
	}
	h := installedHub{deployment: &ds.Items[0]}
	for _, v := range h.deployment.Spec.Template.Spec.Volumes {
		if v.Name == "files" && v.Secret != nil {
			if h.secret, err = c.Admin().CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h.secret == nil {
		t.Fatalf("the hub Deployment mounts no files Secret: %v", h.deployment.Spec.Template.Spec.Volumes)
	}
	if err := yaml.Unmarshal(h.secret.Data["values.yaml"], &h.values); err != nil || h.values == nil {
		t.Fatalf("the hub Secret %s holds no values.yaml: %v", h.secret.Name, err)
	}
	return h
}

// holdsFiles fails unless the hub Secret holds every file of the
// ConfigMap the spawner config wrote, byte for byte, and the hub container
// mounts each of them under spawner.FilesDir.
func (h installedHub) holdsFiles(t *testing.T, c *testcluster.Cluster, ns, configMap string) {
	t.Helper()
	cm, err := c.Admin().CoreV1().ConfigMaps(ns).Get(context.Background(), configMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	if len(files) == 0 {
		t.Fatalf("the ConfigMap %s holds no file", configMap)
	}
	mounts := map[string]string{} // Secret key -> mount path
	for _, m := range h.deployment.Spec.Template.Spec.Containers[0].VolumeMounts {
		if m.Name == "files" {
			mounts[m.SubPath] = m.MountPath
		}
	}
	for name, want := range files {
		key := ""
		for k, got := range h.secret.Data {
			// The values carry the file compressed with gzip (the hub's
			// loader decompresses it); the document is compressed in both.
			if string(got) == string(want) || name == spawner.PythonFile && gunzipped(got) == string(want) {
				key = k
			}
		}
		if key == "" {
			t.Errorf("the hub Secret %s does not hold the provider's %s (%d bytes)", h.secret.Name, name, len(want))
			continue
		}
		if p := mounts[key]; p != spawner.FilesDir+"/"+name {
			t.Errorf("the hub mounts the Secret's %s at %q, want %s/%s", key, p, spawner.FilesDir, name)
		}
	}
}

// templateJSON is the hub pod template without the annotations named.
func (h installedHub) templateJSON(without ...string) string {
	tpl := h.deployment.Spec.Template.DeepCopy()
	for _, k := range without {
		delete(tpl.Annotations, k)
	}
	return spawner.JSON(tpl)
}

// The examples installed with the real helm provider: the release holds
// the provider's files and checksum; a change of the storage that leaves
// the hub's configuration alone (a new user's home made ahead) leaves the
// hub's pod template alone; a change of a profile changes the checksums in
// it, and nothing else, so the Deployment rolls the hub.
func TestAccExamples_helmRelease(t *testing.T) {
	for name, e := range exampleCases() {
		t.Run(name, func(t *testing.T) {
			c := acctest.Cluster(t)
			ns := acctest.Namespace(t)
			p := helmPlatforms[name]
			p.serve(t)
			cfg, release := e.helmConfig(t, ns, c, p)
			ahead := withAttribute(t, cfg, "jupyter_home_storage", "homes", "users", `jsonencode({ erin = {} })`)
			profile := withAttribute(t, ahead, "jupyter_spawner_profile", "small", "mem_limit", `"3G"`)
			class := e.class
			acctest.Seed(t, c.Admin(), ns, acctest.SeedClaim{Name: "claim-alice", Username: "alice",
				Modes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClass: &class})
			var first installedHub
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: exampleFactories(),
				// Declared so that the harness's first init selects it; the
				// CLI installs it from the test bed's mirror (acctest).
				ExternalProviders: map[string]resource.ExternalProvider{
					"helm": {Source: "hashicorp/helm", VersionConstraint: acctest.HelmProviderVersion},
				},
				Steps: []resource.TestStep{
					{
						Config: cfg,
						Check: func(s *terraform.State) error {
							first = readHub(t, c, ns)
							cfgAttrs := s.RootModule().Resources[configAddr].Primary.Attributes
							if got := first.deployment.Spec.Template.Annotations[spawner.ChecksumAnnotation]; got != cfgAttrs["hub_checksum"] {
								return fmt.Errorf("the hub pod's %s is %q, want hub_checksum %s", spawner.ChecksumAnnotation, got, cfgAttrs["hub_checksum"])
							}
							first.holdsFiles(t, c, ns, cfgAttrs["config_map_name"])
							if hubtest.Dig(first.values, "hub.annotations") == nil {
								return fmt.Errorf("the values the hub reads have no hub.annotations: %v", hubtest.SortedKeys(first.values))
							}
							return nil
						},
					},
					{Config: cfg, PlanOnly: true}, // nothing changed: an empty plan, the release too
					{
						Config: ahead,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction("jupyter_home_storage.homes", plancheck.ResourceActionUpdate),
							plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionNoop),
							plancheck.ExpectResourceAction(release, plancheck.ResourceActionNoop),
						}},
						Check: func(*terraform.State) error {
							if _, err := c.Admin().CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "claim-erin", metav1.GetOptions{}); err != nil {
								return fmt.Errorf("erin's home was not made ahead: %w", err)
							}
							h := readHub(t, c, ns)
							if h.deployment.Generation != first.deployment.Generation || h.templateJSON() != first.templateJSON() {
								return fmt.Errorf("a home made ahead changed the hub Deployment (generation %d -> %d): the hub would restart",
									first.deployment.Generation, h.deployment.Generation)
							}
							return nil
						},
					},
					{
						Config: profile,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionUpdate),
							plancheck.ExpectResourceAction(release, plancheck.ResourceActionUpdate),
						}},
						Check: func(s *terraform.State) error {
							h := readHub(t, c, ns)
							want := s.RootModule().Resources[configAddr].Primary.Attributes["hub_checksum"]
							a, b := first.deployment.Spec.Template.Annotations, h.deployment.Spec.Template.Annotations
							if b[spawner.ChecksumAnnotation] != want || a[spawner.ChecksumAnnotation] == want {
								return fmt.Errorf("after a profile change the hub pod's %s is %q (was %q), want the new hub_checksum %s",
									spawner.ChecksumAnnotation, b[spawner.ChecksumAnnotation], a[spawner.ChecksumAnnotation], want)
							}
							if a["checksum/secret"] == b["checksum/secret"] {
								return fmt.Errorf("after a profile change the hub pod's checksum/secret is the same")
							}
							if h.deployment.Generation == first.deployment.Generation {
								return fmt.Errorf("after a profile change the hub Deployment's generation is still %d", h.deployment.Generation)
							}
							if x, y := first.templateJSON(spawner.ChecksumAnnotation, "checksum/secret"), h.templateJSON(spawner.ChecksumAnnotation, "checksum/secret"); x != y {
								return fmt.Errorf("a profile change changed the hub pod template beyond its checksums:\n%s\n%s", x, y)
							}
							h.holdsFiles(t, c, ns, s.RootModule().Resources[configAddr].Primary.Attributes["config_map_name"])
							return nil
						},
					},
				},
			})
		})
	}
}

// gunzipped is b decompressed, "" when b is not gzip.
func gunzipped(b []byte) string {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return ""
	}
	return string(out)
}
