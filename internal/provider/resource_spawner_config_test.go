package provider

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/claims"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
)

const configAddr = "jupyter_spawner_config.hub"

func homeSettingsJSON(mode string) map[string]any {
	var m map[string]any
	h := kubespawner.HomeStorage{AccessMode: mode, Capacity: "10Gi", NameTemplate: "claim-{username}", Scheme: kubespawner.SchemeSafe}
	_ = json.Unmarshal([]byte(hubconfig.JSON(h.Settings())), &m)
	return m
}

// The plan's co-location warnings, through the seam ModifyPlan uses: none
// under ReadWriteMany; under ReadWriteOnce the two GPU failure modes and
// the capacity cap, each naming the profiles and the fix.
func TestSpawnerConfig_colocationDiagnostics(t *testing.T) {
	gpu := hubconfig.Profile{Slug: "gpu", DisplayName: "GPU", CPUGuarantee: one(6), MemGuarantee: "24G", GPU: &hubconfig.GPU{Count: 1}}.Dict()
	small := hubconfig.Profile{Slug: "small", DisplayName: "Small", CPUGuarantee: one(2), MemGuarantee: "4G"}.Dict()
	nodes := []hubconfig.Node{{Name: "cpu-a", CPUMillis: 4000, MemBytes: 16 << 30}, {Name: "gpu-a", CPUMillis: 7000, MemBytes: 30 << 30, Extended: map[string]int64{"nvidia.com/gpu": 1}}}

	rwx, errs := hubconfig.Build(hubconfig.Config{Home: homeSettingsJSON(claims.RWX), Profiles: []map[string]any{gpu, small}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if d := spawnerConfigDiagnostics(rwx, nodes, 2); len(d) != 0 {
		t.Fatalf("warnings under ReadWriteMany:\n%s", diagText(d))
	}
	rwo, _ := hubconfig.Build(hubconfig.Config{Home: homeSettingsJSON(claims.RWO), Profiles: []map[string]any{gpu, small}})
	d := spawnerConfigDiagnostics(rwo, nodes, 2)
	text := diagText(d)
	if d.HasError() || d.WarningsCount() != 3 {
		t.Fatalf("want three warnings:\n%s", text)
	}
	for _, s := range []string{
		"Co-location blocks GPU servers behind running apps", "stays Pending until the spawn timeout",
		"Co-location keeps GPU nodes alive", "cannot scale it down",
		"One user's servers do not fit on one node", "largest node, gpa-a", "needs CPU 8 and memory 28Gi",
		"GPU profile gpu", `switch the home to ReadWriteMany`,
	} {
		if s == "largest node, gpa-a" {
			s = "largest node, gpu-a, has allocatable CPU 7 and memory 30Gi"
		}
		if !strings.Contains(text, s) {
			t.Errorf("warnings lack %q:\n%s", s, text)
		}
	}
	// With one app at most, a lab plus the app fits: no capacity warning.
	if d := spawnerConfigDiagnostics(rwo, nodes, 1); d.WarningsCount() != 2 {
		t.Fatalf("colocated_servers = 1:\n%s", diagText(d))
	}
}

// The plan's size checks, through the seam ModifyPlan uses: nothing for a
// small hub; an error on profiles when the ConfigMap would exceed the
// API server's limit, and a warning on it too when the Helm values would
// not fit the hub Secret or Helm's release record. The ConfigMap holds what the check counts.
func TestSpawnerConfig_sizeDiagnostics(t *testing.T) {
	res, errs := hubconfig.Build(hubconfig.Config{Home: homeSettingsJSON(claims.RWX)})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	files := hubconfig.Render(res)
	var m spawnerConfigModel
	m.ConfigMapName, m.Namespace = types.StringValue("jupyter-spawner"), types.StringValue("jupyter")
	counted := 0
	cm := configMap(&m, files)
	for _, v := range cm.Data {
		counted += len(v)
	}
	for _, v := range cm.BinaryData {
		counted += len(v)
	}
	if s := hubconfig.SizesOf(files, ""); s.ConfigMap != counted {
		t.Errorf("the size check counts %d bytes of the ConfigMap, the API server %d", s.ConfigMap, counted)
	}
	if d := spawnerConfigSizeDiagnostics(res, files, "hub: {}", "jupyter-spawner"); len(d) != 0 {
		t.Fatalf("a small hub: %s", diagText(d))
	}
	big := files
	big.Document = make([]byte, hubconfig.MaxObjectBytes)
	d := spawnerConfigSizeDiagnostics(res, big, "hub: {}", "jupyter-spawner")
	if d.ErrorsCount() != 1 || d.WarningsCount() != 1 {
		t.Fatalf("want one error and one warning:\n%s", diagText(d))
	}
	for _, x := range d {
		want := path.Root("profiles")
		if p, ok := x.(diag.DiagnosticWithPath); !ok || !p.Path().Equal(want) {
			t.Errorf("%q is not at %s", x.Summary(), want)
		}
	}
}

func gzipText(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func spawnerConfigHCL(ns, mode, extra string) string {
	class := ""
	if mode == claims.RWX {
		class = fmt.Sprintf(`storage_class_name = "rwx-%s"`, ns)
	}
	return fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace   = %q
  capacity    = "1Gi"
  access_mode = %q
  %s
}

resource "jupyter_spawner_profile" "small" {
  slug          = "small"
  display_name  = "Small"
  default       = true
  cpu_guarantee = 0.5
  mem_guarantee = "1G"
}

resource "jupyter_spawner_config" "hub" {
  namespace             = %q
  home_storage_settings = jupyter_home_storage.homes.spawner_settings
  profiles              = [jupyter_spawner_profile.small.profile_json]
  %s
}

output "helm_values" {
  value = provider::jupyter::helm_values(jupyter_spawner_config.hub)
}
`, ns, mode, class, ns, extra)
}

// The ConfigMap holds exactly the rendered file and document; the derived
// co-location follows the home's mode; changing it updates the ConfigMap;
// destroy deletes it.
func TestAccSpawnerConfig_configMap(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	matches := func(s *terraform.State) error {
		attrs := s.RootModule().Resources[configAddr].Primary.Attributes
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "jupyter-spawner", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cm.Data[hubconfig.PythonFile] != hubconfig.Python() {
			return fmt.Errorf("the ConfigMap's %s is not the rendered file", hubconfig.PythonFile)
		}
		if sum := hubconfig.ConfigMapChecksum(cm.Data, cm.BinaryData); sum != attrs["hub_checksum"] {
			return fmt.Errorf("the ConfigMap's content has checksum %s, hub_checksum is %s", sum, attrs["hub_checksum"])
		}
		if len(cm.Data) != 1 || len(cm.BinaryData) != 1 || cm.BinaryData[hubconfig.DocumentFile] == nil {
			return fmt.Errorf("the ConfigMap holds %v and %v, want %s and %s", slices.Sorted(maps.Keys(cm.Data)), slices.Sorted(maps.Keys(cm.BinaryData)), hubconfig.PythonFile, hubconfig.DocumentFile)
		}
		var doc struct {
			KubeSpawner map[string]any
			Colocation  map[string]any `json:"colocation"`
		}
		if err := hubconfig.DecodeDocumentFile(cm.BinaryData[hubconfig.DocumentFile], &doc); err != nil {
			return err
		}
		var want map[string]any
		if err := json.Unmarshal([]byte(attrs["kubespawner_json"]), &want); err != nil {
			return err
		}
		if !reflect.DeepEqual(doc.KubeSpawner, want) {
			return fmt.Errorf("the ConfigMap's document differs from kubespawner_json:\n%s\n%s", hubconfig.JSON(doc.KubeSpawner), attrs["kubespawner_json"])
		}
		if len(doc.Colocation) != 2 || doc.Colocation["label"] != attrs["colocation_label"] || doc.Colocation["topology_key"] != hubconfig.HostnameTopologyKey {
			return fmt.Errorf("colocation %v in the ConfigMap, want the label %s and the topology only (no user, no mode)", doc.Colocation, attrs["colocation_label"])
		}
		list, _ := want["profile_list"].([]any)
		if len(list) != 1 || want["storage_access_modes"] == nil {
			return fmt.Errorf("kubespawner_json lacks the profile or the home: %s", attrs["kubespawner_json"])
		}
		var values map[string]any
		out, ok := s.RootModule().Outputs["helm_values"]
		if !ok {
			return fmt.Errorf("no output helm_values")
		}
		if err := yaml.Unmarshal([]byte(fmt.Sprint(out.Value)), &values); err != nil {
			return fmt.Errorf("helm_values is not YAML: %v", err)
		}
		hub, _ := values["hub"].(map[string]any)
		annotations, _ := hub["annotations"].(map[string]any)
		if sum := attrs["hub_checksum"]; len(sum) != 64 || annotations[hubconfig.ChecksumAnnotation] != sum {
			return fmt.Errorf("helm_values' hub.annotations %v do not carry hub_checksum %q", annotations, sum)
		}
		files, _ := hub["extraFiles"].(map[string]any)
		file, _ := files[hubconfig.ExtraFileDocument].(map[string]any)
		if gz, err := base64.StdEncoding.DecodeString(fmt.Sprint(file["binaryData"])); err != nil || !bytes.Equal(gz, cm.BinaryData[hubconfig.DocumentFile]) {
			return fmt.Errorf("helm_values' hub.extraFiles carry another document than the ConfigMap (%v)", err)
		}
		storage, _ := values["singleuser"].(map[string]any)["storage"].(map[string]any)
		mounts, _ := want["volume_mounts"].([]any)
		if len(mounts) != 1 || storage["homeMountPath"] != attrs["home_mount_path"] || mounts[0].(map[string]any)["mountPath"] != attrs["home_mount_path"] {
			return fmt.Errorf("home mount %v / singleuser.storage.homeMountPath %v, want home_mount_path %q", mounts, storage["homeMountPath"], attrs["home_mount_path"])
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			if _, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "jupyter-spawner", metav1.GetOptions{}); err == nil {
				return fmt.Errorf("the ConfigMap outlived destroy")
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWO, `extra_settings_json = jsonencode({ start_timeout = 600 })`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(configAddr, tfjsonpath.New("colocation_mode"), knownvalue.StringExact("all")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(configAddr, "colocation_required", "true"),
					resource.TestCheckResourceAttr(configAddr, "id", ns+"/jupyter-spawner"),
					matches,
				),
			},
			{
				Config:   acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWO, `extra_settings_json = jsonencode({ start_timeout = 600 })`)),
				PlanOnly: true,
			},
			{
				// The file edited outside Terraform, the document not: the
				// plan puts it back, shown as a change of hub_checksum,
				// which a refresh takes from the ConfigMap's content.
				PreConfig: func() {
					cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "jupyter-spawner", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cm.Data[hubconfig.PythonFile] += "c.KubeSpawner.start_timeout = 1\n"
					if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWO, `extra_settings_json = jsonencode({ start_timeout = 600 })`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionUpdate),
					expectChanged(configAddr, "hub_checksum"),
				}},
				Check: matches,
			},
			{
				// Edited outside Terraform: the plan puts it back.
				PreConfig: func() {
					cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "jupyter-spawner", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cm.BinaryData[hubconfig.DocumentFile] = gzipText(t, `{"KubeSpawner": {"start_timeout": 1}, "colocation": {"mode": "none"}}`)
					if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWO, `extra_settings_json = jsonencode({ start_timeout = 600 })`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionUpdate),
				}},
				Check: matches,
			},
			{
				// As an older provider version wrote it (the plain JSON
				// document, no compressed one): the plan rewrites it, and
				// the plain document goes, so no hub reads it.
				PreConfig: func() {
					cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "jupyter-spawner", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					var doc map[string]any
					if err := hubconfig.DecodeDocumentFile(cm.BinaryData[hubconfig.DocumentFile], &doc); err != nil {
						t.Fatal(err)
					}
					cm.Data = map[string]string{hubconfig.PythonFile: "# an older provider's file\n", hubconfig.JSONFile: hubconfig.JSON(doc)}
					cm.BinaryData = nil
					if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWO, `extra_settings_json = jsonencode({ start_timeout = 600 })`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(configAddr, tfjsonpath.New("kubespawner_json"), knownvalue.StringRegexp(regexp.MustCompile(`"start_timeout":600`))),
				}},
				Check: matches,
			},
			{
				Config: acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWX, "colocation_label = \"nebari.dev/colocate-user\"\nhome_mount_path = \"/home/{username}\"")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(configAddr, tfjsonpath.New("colocation_mode"), knownvalue.StringExact("by_claim")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(configAddr, "colocation_required", "false"),
					matches,
				),
			},
		},
	})
}

// Settings the home storage owns cannot be overridden; the error names the
// attribute and where to change it.
func TestAccSpawnerConfig_badInput(t *testing.T) {
	ns := acctest.Namespace(t)
	cases := map[string]struct{ extra, want string }{
		"home_key":     {`extra_settings_json = jsonencode({ storage_access_modes = ["ReadWriteMany"] })`, `storage_access_modes is set by the home storage.*jupyter_home_storage`},
		"not_json":     {`extra_settings_json = "start_timeout: 600"`, `Not a JSON object`},
		"label":        {`colocation_label = "Not A Label"`, `Invalid label key`},
		"colocated":    {`colocated_servers = 0`, `colocated_servers.*at least 1`},
		"profile_list": {`extra_settings_json = jsonencode({ profile_list = [] })`, `profile_list is set by profiles`},
		"named_list":   {`extra_settings_json = jsonencode({ init_containers = [{ image = "busybox" }] })`, `init_containers\[0\] has no name.*merges init_containers`},
		"mount_rel":    {`home_mount_path = "home/jovyan"`, `Invalid home mount path.*home_mount_path.*is not absolute`},
		"mount_field":  {`home_mount_path = "/home/{user}"`, `Invalid home mount path.*not a KubeSpawner template.*user`},
		"legacy_users": {`legacy_users = "{}"`, `An argument named "legacy_users" is not expected here`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      acctest.AdminConfig(t, spawnerConfigHCL(ns, claims.RWO, tc.extra)),
					ExpectError: wrapRE(`(?s)` + tc.want),
				}},
			})
		})
	}
	if got, _ := acctest.Cluster(t).Admin().CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=spawner-config"}); len(got.Items) != 0 {
		t.Errorf("bad input reached the cluster: %d ConfigMaps", len(got.Items))
	}
}
