package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubtest"
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
	// secrets are the Secrets the platform's operator makes for the hub
	// once the release is installed: their data by the path the hub
	// mounts them at.
	secrets map[string]map[string]string
	// hubEnv names the hub's mounts that its configuration finds through
	// an environment variable (variable -> mount path): the hub loaded
	// here reads them there.
	hubEnv map[string]string
}

var helmPlatforms = map[string]helmPlatform{
	"z2jh": {chart: hubtest.Z2jhChart, serve: func(testing.TB) {}},
	"nebari": {
		chart: hubtest.PackChart,
		// Nebari sets these; the pack's keycloak job needs a file its
		// published chart carries and the reference tree does not.
		set:   map[string]string{"keycloak.hostname": "keycloak.example.org", "rbac.bootstrap.enabled": "false"},
		serve: hubtest.NebariAppCRD,
		// Nebari's operator makes the hub's OIDC client Secret (the
		// pack's oauth-client volume); its 00-gateway-auth.py reads it
		// from OAUTH_SECRET_DIR, /etc/oauth by default.
		secrets: map[string]map[string]string{"/etc/oauth": {
			"issuer-url": "https://keycloak.example.org/realms/nebari", "client-id": "nebari-data-science-pack", "client-secret": "not-a-secret",
		}},
		hubEnv: map[string]string{"OAUTH_SECRET_DIR": "/etc/oauth"},
	},
}

// operate makes the Secrets of p.secrets, with the names the hub's
// volumes mounted at their paths give them.
func (p helmPlatform) operate(t *testing.T, c *testcluster.Cluster, ns string, h installedHub) {
	t.Helper()
	for _, path := range hubtest.SortedKeys(p.secrets) {
		v := h.volumeAt(t, path)
		if v == nil || v.Secret == nil {
			t.Fatalf("the hub mounts no Secret at %s", path)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: v.Secret.SecretName}, StringData: p.secrets[path]}
		if _, err := c.Admin().CoreV1().Secrets(ns).Create(context.Background(), secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
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

// configDDir is the folder of the hub's jupyterhub_config.d files.
const configDDir = "/usr/local/etc/jupyterhub/jupyterhub_config.d"

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
	pod := h.deployment.Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Name == "files" && v.Secret != nil {
			if h.secret, err = c.Admin().CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if h.secret == nil {
		t.Fatalf("the hub Deployment mounts no files Secret: %v", pod.Volumes)
	}
	if err := yaml.Unmarshal(h.secret.Data["values.yaml"], &h.values); err != nil || h.values == nil {
		t.Fatalf("the hub Secret %s holds no values.yaml: %v", h.secret.Name, err)
	}
	return h
}

// volumeAt is the volume the hub container mounts at path, nil if none;
// it fails on a mount inside path, which the test does not read.
func (h installedHub) volumeAt(t *testing.T, path string) *corev1.Volume {
	t.Helper()
	pod := h.deployment.Spec.Template.Spec
	for _, m := range pod.Containers[0].VolumeMounts {
		switch p := strings.TrimSuffix(m.MountPath, "/"); {
		case strings.HasPrefix(p, path+"/"):
			t.Fatalf("the hub mounts volume %s at %s, inside %s: the test reads whole mounts only", m.Name, m.MountPath, path)
		case p == path && m.SubPath == "":
			for i, v := range pod.Volumes {
				if v.Name == m.Name {
					return &pod.Volumes[i]
				}
			}
			t.Fatalf("the hub mounts volume %s, which its pod lacks", m.Name)
		}
	}
	return nil
}

// mounted is a temporary directory holding the files of the ConfigMap or
// Secret the hub mounts at path, empty when it mounts none there.
func (h installedHub) mounted(t *testing.T, c *testcluster.Cluster, ns, path string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string][]byte{}
	switch v := h.volumeAt(t, path); {
	case v == nil:
	case v.ConfigMap != nil:
		cm, err := c.Admin().CoreV1().ConfigMaps(ns).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, x := range cm.Data {
			files[k] = []byte(x)
		}
		maps.Copy(files, cm.BinaryData)
	case v.Secret != nil:
		s, err := c.Admin().CoreV1().Secrets(ns).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(files, s.Data)
	default:
		t.Fatalf("the hub mounts volume %s at %s, neither a ConfigMap nor a Secret", v.Name, path)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// storedRelease is a release as Helm stores it, in the Secret
// sh.helm.release.v1.<name>.v<version> of its namespace: the manifest of
// the objects it installed and those of its hooks.
type storedRelease struct {
	Version  int    `json:"version"`
	Manifest string `json:"manifest"`
	Hooks    []struct {
		Manifest string `json:"manifest"`
	} `json:"hooks"`
}

// readRelease reads the deployed release name in ns from Helm's storage.
func readRelease(t *testing.T, c *testcluster.Cluster, ns, name string) storedRelease {
	t.Helper()
	ss, err := c.Admin().CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,status=deployed,name=" + name})
	if err != nil || len(ss.Items) != 1 {
		t.Fatalf("Helm stores %d deployed releases %s in %s (%v), want 1", len(ss.Items), name, ns, err)
	}
	// The release is JSON, compressed with gzip and encoded in base64.
	b, err := base64.StdEncoding.DecodeString(string(ss.Items[0].Data["release"]))
	if err != nil {
		t.Fatalf("the release %s is not base64: %v", ss.Items[0].Name, err)
	}
	var r storedRelease
	if err := json.Unmarshal([]byte(gunzipped(b)), &r); err != nil || r.Manifest == "" {
		t.Fatalf("the release %s holds no manifest: %v", ss.Items[0].Name, err)
	}
	return r
}

// objects are the objects Helm rendered for the release, its hooks' too
// (which the test bed does not run, disable_webhooks), by kind/name.
func (r storedRelease) objects(t *testing.T) map[string]map[string]any {
	t.Helper()
	text := r.Manifest
	for _, h := range r.Hooks {
		text += "\n---\n" + h.Manifest
	}
	return hubtest.Manifest(t, text)
}

// hubAccount is the API server as the ServiceAccount the hub runs as,
// which Helm installed; it fails unless the roles bound to it are the hub
// Role zero-to-jupyterhub renders by default, no more, so that the hub's
// requests get exactly the chart's default hub permissions.
func (h installedHub) hubAccount(t *testing.T, c *testcluster.Cluster, ns string) hubtest.HubAPI {
	t.Helper()
	ctx := context.Background()
	account := h.deployment.Spec.Template.Spec.ServiceAccountName
	if account == "" {
		t.Fatal("the hub Deployment names no ServiceAccount")
	}
	bound := func(subjects []rbacv1.Subject) bool {
		return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == account && s.Namespace == ns
		})
	}
	var rules []rbacv1.PolicyRule
	rbs, err := c.Admin().RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, rb := range rbs.Items {
		if !bound(rb.Subjects) {
			continue
		}
		if rb.RoleRef.Kind != "Role" {
			t.Fatalf("the RoleBinding %s gives the hub the %s %s", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name)
		}
		role, err := c.Admin().RbacV1().Roles(ns).Get(ctx, rb.RoleRef.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, role.Rules...)
	}
	crbs, err := c.Admin().RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crb := range crbs.Items {
		if bound(crb.Subjects) {
			t.Fatalf("the ClusterRoleBinding %s gives the hub the %s %s", crb.Name, crb.RoleRef.Kind, crb.RoleRef.Name)
		}
	}
	var chart rbacv1.Role
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(hubtest.HelmTemplate(t, hubtest.Z2jhChart(t))["Role/hub"], &chart); err != nil || len(chart.Rules) == 0 {
		t.Fatalf("the chart renders no hub Role by default: %v", err)
	}
	if hubconfig.JSON(rules) != hubconfig.JSON(chart.Rules) {
		t.Fatalf("the hub's ServiceAccount %s may do %s, the chart's hub Role %s", account, hubconfig.JSON(rules), hubconfig.JSON(chart.Rules))
	}
	return hubtest.AccountAPI(t, ns, account)
}

// holdsFiles fails unless the hub Secret holds every file of the
// ConfigMap the spawner config wrote, byte for byte, and the hub container
// mounts each of them under hubconfig.FilesDir.
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
			if string(got) == string(want) || name == hubconfig.PythonFile && gunzipped(got) == string(want) {
				key = k
			}
		}
		if key == "" {
			t.Errorf("the hub Secret %s does not hold the provider's %s (%d bytes)", h.secret.Name, name, len(want))
			continue
		}
		if p := mounts[key]; p != hubconfig.FilesDir+"/"+name {
			t.Errorf("the hub mounts the Secret's %s at %q, want %s/%s", key, p, hubconfig.FilesDir, name)
		}
	}
}

// templateJSON is the hub pod template without the annotations named.
func (h installedHub) templateJSON(without ...string) string {
	tpl := h.deployment.Spec.Template.DeepCopy()
	for _, k := range without {
		delete(tpl.Annotations, k)
	}
	return hubconfig.JSON(tpl)
}

// spawn loads the hub from what Helm installed in ns (h: the values in the
// hub Secret, the jupyterhub_config.d files it mounts, the mounts p.hubEnv
// names) and spawns the users with real KubeSpawner, the hub asking the
// test bed's API server as hub says; users whose claim is ReadWriteOnce
// (legacy) are pinned. The API server accepts each claim and pod
// (server-side dry run).
func (e exampleCase) spawn(t *testing.T, c *testcluster.Cluster, ns string, p helmPlatform, h installedHub, hub hubtest.HubAPI, legacy []string, users []hubtest.HubUser) {
	t.Helper()
	for _, k := range hubtest.SortedKeys(p.hubEnv) {
		t.Setenv(k, h.mounted(t, c, ns, p.hubEnv[k]))
	}
	got := hubtest.RunHub(t, hub, h.values, h.mounted(t, c, ns, configDDir), hubconfig.FilesDir, users)
	for _, u := range users {
		s, ok := got[u.Name]
		if !ok {
			t.Fatalf("no spawn of %s", u.Name)
		}
		where := fmt.Sprintf("%s on %s", u.Name, u.Profile)
		if s.Refused != "" {
			t.Errorf("%s: the hub refused the spawn: %s (%s)", where, s.Refused, s.RefusedLog)
			continue
		}
		if !slices.Contains(s.Offered, u.Profile) {
			t.Errorf("%s: %s is not offered: %v", where, u.Profile, s.Offered)
		}
		claim := "claim-" + u.Name
		if s.PVCName != claim || hubtest.Dig(s.PVC, "spec.storageClassName") != e.class || hubconfig.JSON(hubtest.Dig(s.PVC, "spec.accessModes")) != `["ReadWriteMany"]` {
			t.Errorf("%s: KubeSpawner ensures claim %s of class %v, modes %v; want %s, %s, ReadWriteMany",
				where, s.PVCName, hubtest.Dig(s.PVC, "spec.storageClassName"), hubtest.Dig(s.PVC, "spec.accessModes"), claim, e.class)
		}
		f := hubtest.FactsOf(t, s.Pod)
		if f.Mounts["/home/jovyan"] != "home" || hubtest.Dig(f.Volumes["home"], "persistentVolumeClaim.claimName") != claim {
			t.Errorf("%s: /home/jovyan mounts %q, home volume %v; want claim %s", where, f.Mounts["/home/jovyan"], f.Volumes["home"], claim)
		}
		terms := f.ColocationTerms(e.label)
		if slices.Contains(legacy, u.Name) {
			if f.Labels[e.label] != u.Name || hubconfig.JSON(terms) != hubconfig.JSON([]string{hubconfig.JSON([]string{u.Name})}) {
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

// The examples installed with the real helm provider. alice has a
// ReadWriteOnce claim (a legacy user), dave none (a new user): the release
// holds the provider's files and checksum, the API server accepts every
// object the chart renders for it, and the hub loaded from what Helm
// installed spawns them with real KubeSpawner as the hub's ServiceAccount,
// pinning alice. An upgrade of the same release leaves the hub's pod
// template alone. Then bob's ReadWriteOnce claim appears: only
// legacy_users (informational) changes, the hub's configuration and the
// release do not, and the hub pins bob at his next spawn from his claim. A
// change of the storage that leaves the hub's configuration alone (a new
// user's home made ahead) leaves the hub's pod template alone; a change of
// a profile changes the checksums in it, and nothing else, so the
// Deployment rolls the hub.
func TestAccExamples_helmRelease(t *testing.T) {
	for name, e := range exampleCases() {
		t.Run(name, func(t *testing.T) {
			c := acctest.Cluster(t)
			ns := acctest.Namespace(t)
			p := helmPlatforms[name]
			p.serve(t)
			api := hubtest.TestAPIServer(t) // after serve: it maps the kinds served
			cfg, release := e.helmConfig(t, ns, c, p)
			upgrade := func(description string) string {
				return withAttribute(t, cfg, "helm_release", strings.TrimPrefix(release, "helm_release."), "description", fmt.Sprintf("%q", description))
			}
			again := upgrade("upgraded twice")
			ahead := withAttribute(t, again, "jupyter_home_storage", "homes", "users", `jsonencode({ erin = {} })`)
			profile := withAttribute(t, ahead, "jupyter_spawner_profile", "small", "mem_limit", `"3G"`)
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
			// first is the hub as the release first installed it; upgraded
			// as the release's first upgrade left it, which later steps
			// compare with.
			var first, upgraded installedHub
			var installed storedRelease
			var hub hubtest.HubAPI
			releaseName := func(s *terraform.State) string { return s.RootModule().Resources[release].Primary.Attributes["name"] }
			// unchanged fails unless the hub Deployment is as the release's
			// first upgrade left it.
			unchanged := func(h installedHub, cause string) error {
				if h.deployment.Generation != upgraded.deployment.Generation || h.templateJSON() != upgraded.templateJSON() {
					return fmt.Errorf("%s changed the hub Deployment (generation %d -> %d): the hub would restart",
						cause, upgraded.deployment.Generation, h.deployment.Generation)
				}
				return nil
			}
			// upgradedBy fails unless Helm made a new revision of the release.
			upgradedBy := func(s *terraform.State, before int) (storedRelease, error) {
				r := readRelease(t, c, ns, releaseName(s))
				if r.Version <= before {
					return r, fmt.Errorf("the release is still at version %d: Helm did not upgrade it", r.Version)
				}
				return r, nil
			}
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
							if err := acctest.LegacyUsersIs(legacyUsers(s), map[string]string{"alice": "claim-alice"}); err != nil {
								return err
							}
							first = readHub(t, c, ns)
							cfgAttrs := s.RootModule().Resources[configAddr].Primary.Attributes
							if got := first.deployment.Spec.Template.Annotations[hubconfig.ChecksumAnnotation]; got != cfgAttrs["hub_checksum"] {
								return fmt.Errorf("the hub pod's %s is %q, want hub_checksum %s", hubconfig.ChecksumAnnotation, got, cfgAttrs["hub_checksum"])
							}
							first.holdsFiles(t, c, ns, cfgAttrs["config_map_name"])
							if hubtest.Dig(first.values, "hub.annotations") == nil {
								return fmt.Errorf("the values the hub reads have no hub.annotations: %v", hubtest.SortedKeys(first.values))
							}
							installed = readRelease(t, c, ns, releaseName(s))
							if n := api.DryRunRendered(t, installed.objects(t)); n == 0 {
								return fmt.Errorf("nothing accepted")
							}
							hub = first.hubAccount(t, c, ns)
							p.operate(t, c, ns, first)
							e.spawn(t, c, ns, p, first, hub, []string{"alice"}, []hubtest.HubUser{
								{Name: "alice", Profile: e.small, AuthState: e.auth},
								{Name: "dave", Profile: e.gpu, AuthState: e.auth},
							})
							return nil
						},
					},
					{Config: cfg, PlanOnly: true}, // nothing changed: an empty plan, the release too
					{
						// helm upgrade of the same chart and values (only the
						// release's description changes). The chart keeps the
						// secrets it generated at install (its lookup of the
						// hub Secret), so the hub Secret stays as it was; its
						// checksum/secret changes this once: at install the
						// chart checksums another draw of those secrets than
						// the one it stores.
						Config: upgrade("upgraded once"),
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionNoop),
							plancheck.ExpectResourceAction(release, plancheck.ResourceActionUpdate),
						}},
						Check: func(s *terraform.State) error {
							r, err := upgradedBy(s, installed.Version)
							if err != nil {
								return err
							}
							installed = r
							upgraded = readHub(t, c, ns)
							if !maps.EqualFunc(first.secret.Data, upgraded.secret.Data, bytes.Equal) {
								return fmt.Errorf("the same release upgraded changed the hub Secret %s", upgraded.secret.Name)
							}
							if x, y := first.templateJSON("checksum/secret"), upgraded.templateJSON("checksum/secret"); x != y {
								return fmt.Errorf("the same release upgraded changed the hub pod template beyond checksum/secret:\n%s\n%s", x, y)
							}
							return nil
						},
					},
					{
						// Every further upgrade renders the same hub: an upgrade
						// of the same release does not restart it.
						Config: again,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionNoop),
							plancheck.ExpectResourceAction(release, plancheck.ResourceActionUpdate),
						}},
						Check: func(s *terraform.State) error {
							if _, err := upgradedBy(s, installed.Version); err != nil {
								return err
							}
							return unchanged(readHub(t, c, ns), "the same release upgraded again")
						},
					},
					{
						// bob's ReadWriteOnce claim appears: the hub's configuration
						// and the release do not change.
						PreConfig: func() { acctest.Seed(t, c.Admin(), ns, rwo("bob")) },
						Config:    again,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionNoop),
							plancheck.ExpectResourceAction(release, plancheck.ResourceActionNoop),
						}},
						Check: func(s *terraform.State) error {
							if err := acctest.LegacyUsersIs(legacyUsers(s), map[string]string{"alice": "claim-alice", "bob": "claim-bob"}); err != nil {
								return err
							}
							api.DryRunRendered(t, readRelease(t, c, ns, releaseName(s)).objects(t))
							h := readHub(t, c, ns)
							if err := unchanged(h, "a new ReadWriteOnce claim"); err != nil {
								return err
							}
							e.spawn(t, c, ns, p, h, hub, []string{"alice", "bob"}, []hubtest.HubUser{
								{Name: "bob", Profile: e.small, AuthState: e.auth},
								{Name: "dave", Profile: e.small, AuthState: e.auth},
							})
							return nil
						},
					},
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
							return unchanged(readHub(t, c, ns), "a home made ahead")
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
							a, b := upgraded.deployment.Spec.Template.Annotations, h.deployment.Spec.Template.Annotations
							if b[hubconfig.ChecksumAnnotation] != want || a[hubconfig.ChecksumAnnotation] == want {
								return fmt.Errorf("after a profile change the hub pod's %s is %q (was %q), want the new hub_checksum %s",
									hubconfig.ChecksumAnnotation, b[hubconfig.ChecksumAnnotation], a[hubconfig.ChecksumAnnotation], want)
							}
							if a["checksum/secret"] == b["checksum/secret"] {
								return fmt.Errorf("after a profile change the hub pod's checksum/secret is the same")
							}
							if h.deployment.Generation == upgraded.deployment.Generation {
								return fmt.Errorf("after a profile change the hub Deployment's generation is still %d", h.deployment.Generation)
							}
							if x, y := upgraded.templateJSON(hubconfig.ChecksumAnnotation, "checksum/secret"), h.templateJSON(hubconfig.ChecksumAnnotation, "checksum/secret"); x != y {
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
