package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/hubconfig"
)

const profileAddr = "jupyter_spawner_profile.gpu"

func TestSpawnerProfile_schemaIsValid(t *testing.T) {
	for _, r := range []fwresource.Resource{NewSpawnerProfileResource(), NewSpawnerConfigResource()} {
		var resp fwresource.SchemaResponse
		r.Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
		if resp.Diagnostics.HasError() {
			t.Fatal(resp.Diagnostics)
		}
		if d := resp.Schema.ValidateImplementation(context.Background()); d.HasError() {
			t.Fatal(d)
		}
	}
}

// seedNode creates a Node object (no kubelet behind it) and deletes it
// when the test ends. gpus > 0 adds nvidia.com/gpu and its taint.
func seedNode(t *testing.T, cs kubernetes.Interface, name, cpu, mem string, gpus int64, labels map[string]string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: kresource.MustParse(cpu), corev1.ResourceMemory: kresource.MustParse(mem), corev1.ResourcePods: kresource.MustParse("110"),
		}},
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	if gpus > 0 {
		n.Status.Allocatable["nvidia.com/gpu"] = *kresource.NewQuantity(gpus, kresource.DecimalSI)
		n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	created, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, ok := created.Status.Allocatable[corev1.ResourceCPU]; !ok {
		t.Fatalf("node %s was created without its allocatable resources", name)
	}
	return created
}

func diagText(d diag.Diagnostics) string {
	var b strings.Builder
	for _, x := range d {
		fmt.Fprintf(&b, "%s: %s: %s\n", x.Severity(), x.Summary(), x.Detail())
	}
	return b.String()
}

func one(v float64) *float64 { return &v }

// The plan's node checks, through the seam ModifyPlan uses: nodes converted
// from corev1.Node objects as the live List returns them.
func TestSpawnerProfile_nodeDiagnostics(t *testing.T) {
	mk := func(name, cpu, mem string, gpus int64) hubconfig.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: kresource.MustParse(cpu), corev1.ResourceMemory: kresource.MustParse(mem)}}}
		if gpus > 0 {
			n.Status.Allocatable["nvidia.com/gpu"] = *kresource.NewQuantity(gpus, kresource.DecimalSI)
			n.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}}
		}
		return nodeOf(n)
	}
	nodes := []hubconfig.Node{mk("cpu-a", "4", "16Gi", 0), mk("gpu-a", "8", "32Gi", 1)}
	gpu := hubconfig.Profile{Slug: "gpu", DisplayName: "GPU", CPUGuarantee: one(2), MemGuarantee: "8G", GPU: &hubconfig.GPU{Count: 1}}

	// No toleration: the GPU node's taint keeps it away; a warning names it.
	d := profileNodeDiagnostics(gpu, nodes, hubconfig.ProfileCheck{})
	if d.HasError() || d.WarningsCount() != 1 || !strings.Contains(diagText(d), "untolerated taint nvidia.com/gpu=true:NoSchedule") ||
		!strings.Contains(diagText(d), "autoscaler may add one") {
		t.Fatalf("want one warning about the taint:\n%s", diagText(d))
	}
	// With the toleration it fits: no diagnostics.
	gpu.Tolerations = []hubconfig.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}}
	if d := profileNodeDiagnostics(gpu, nodes, hubconfig.ProfileCheck{RequireSchedulable: true}); len(d) != 0 {
		t.Fatalf("fitting profile:\n%s", diagText(d))
	}
	// Two GPUs: more than any node has; an error only with require_schedulable.
	gpu.GPU.Count = 2
	if d := profileNodeDiagnostics(gpu, nodes, hubconfig.ProfileCheck{RequireSchedulable: true}); !d.HasError() || !strings.Contains(diagText(d), "allocatable nvidia.com/gpu 1 < 2") {
		t.Fatalf("want an error:\n%s", diagText(d))
	}
	if d := profileNodeDiagnostics(gpu, nodes, hubconfig.ProfileCheck{}); d.HasError() || d.WarningsCount() != 1 {
		t.Fatalf("want a warning:\n%s", diagText(d))
	}
	// A selector no node matches.
	sel := hubconfig.Profile{DisplayName: "Pool", NodeSelector: map[string]string{"pool": "highmem"}}
	if d := profileNodeDiagnostics(sel, nodes, hubconfig.ProfileCheck{RequireSchedulable: true}); d.HasError() || !strings.Contains(diagText(d), "no label pool=highmem") {
		t.Fatalf("selector:\n%s", diagText(d))
	}
}

func TestSpawnerProfile_findingPath(t *testing.T) {
	for in, want := range map[string]string{
		"gpu.count":       "gpu.count",
		"volumes[2].name": "volumes[2].name",
		`options["image"].unlisted_choice.validation_regex`: `options["image"].unlisted_choice.validation_regex`,
		"cpu_guarantee": "cpu_guarantee",
	} {
		if got := findingPath(in).String(); got != want {
			t.Errorf("findingPath(%q) = %s, want %s", in, got, want)
		}
	}
}

// Bad input fails at validate time, naming the attribute and the fix, and
// never reaches the cluster.
func TestAccSpawnerProfile_badInput(t *testing.T) {
	acctest.Cluster(t)
	cases := map[string]struct{ body, want string }{
		"gpu_zero":        {`gpu = { count = 0 }`, `GPU count must be at least 1.*gpu.count = 0 asks for no GPU.*remove gpu`},
		"gpu_no_count":    {`gpu = { resource_name = "amd.com/gpu" }`, `gpu.count is required`},
		"cpu_over_limit":  {"cpu_guarantee = 4\ncpu_limit = 2", `cpu_guarantee is above cpu_limit.*cpu_limit = 2`},
		"mem_over_limit":  {"mem_guarantee = \"8G\"\nmem_limit = \"4G\"", `mem_guarantee is above mem_limit.*mem_limit = "4G"`},
		"mem_k8s_unit":    {`mem_limit = "4Gi"`, `Invalid memory size.*not accepted by KubeSpawner`},
		"bad_regex":       {`options = { image = { choices = { a = {} }, unlisted_choice = { validation_regex = "^(broken" } } }`, `Invalid validation regex.*does not compile`},
		"override_json":   {`kubespawner_override_json = "[1]"`, `Not a JSON object`},
		"two_claims":      {"volumes = [{\nname = \"d\"\nmount_path = \"/d\"\n}]", `A volume needs exactly one claim`},
		"new_claim_no_ns": {"volumes = [{\nname = \"d\"\nmount_path = \"/d\"\nnew_claim = { size = \"1Gi\" }\n}]", `namespace is required for new_claim volumes`},
		"mode_not_allowed": {"namespace = \"x\"\nvolume_defaults = { allowed_access_modes = [\"ReadWriteMany\"] }\nvolumes = [{\nname = \"d\"\nmount_path = \"/d\"\nnew_claim = {\nsize = \"1Gi\"\naccess_mode = \"ReadWriteOnce\"\n}\n}]",
			`Access mode not allowed.*ReadWriteOnce is not in volume_defaults.allowed_access_modes`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      acctest.AdminConfig(t, "resource \"jupyter_spawner_profile\" \"gpu\" {\ndisplay_name = \"GPU\"\n"+tc.body+"\n}"),
					ExpectError: wrapRE(`(?s)` + tc.want),
				}},
			})
		})
	}
}

// Against seeded CPU and GPU nodes: a GPU profile that fits plans and
// creates its shared claim; guarantees above every node fail the plan with
// require_schedulable = true.
func TestAccSpawnerProfile_nodesAndClaims(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	seedNode(t, cs, ns+"-cpu", "4", "16Gi", 0, map[string]string{"pool": "cpu"})
	seedNode(t, cs, ns+"-gpu", "8", "64Gi", 1, map[string]string{"pool": "gpu"})
	profile := func(cpu, extra string) string {
		return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_spawner_profile" "gpu" {
  slug          = "gpu"
  display_name  = "GPU"
  namespace     = %q
  image         = "quay.io/jupyter/pytorch-notebook:cuda12-latest"
  cpu_guarantee = %s
  cpu_limit     = 16
  mem_guarantee = "8G"
  mem_limit     = "16G"
  node_selector = { pool = "gpu" }
  gpu = { count = 1 }
  tolerations = [{
    key      = "nvidia.com/gpu"
    operator = "Exists"
    effect   = "NoSchedule"
  }]
  volume_defaults = {
    allowed_access_modes = ["ReadWriteMany", "ReadOnlyMany"]
    annotations          = { "backup.example.org/enabled" = "true" }
  }
  volumes = [{
    name       = "datasets"
    mount_path = "/datasets"
    read_only  = true
    new_claim = { size = "5Gi" }
  }]
  options = {
    image = {
      display_name = "Image"
      choices = {
        cuda12 = { display_name = "CUDA 12", default = true, kubespawner_override_json = jsonencode({ image = "quay.io/jupyter/pytorch-notebook:cuda12-latest" }) }
      }
      unlisted_choice = {
        display_name              = "Other image"
        validation_regex          = "^quay\\.io/jupyter/[a-z-]+:[a-z0-9.-]+$"
        kubespawner_override_json = jsonencode({ image = "{value}" })
      }
    }
  }
  %s
}
`, ns, cpu, extra))
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: profile("2", ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(profileAddr, "id", "gpu"),
					func(s *terraform.State) error {
						var d map[string]any
						if err := json.Unmarshal([]byte(s.RootModule().Resources[profileAddr].Primary.Attributes["profile_json"]), &d); err != nil {
							return err
						}
						o := d["kubespawner_override"].(map[string]any)
						if fmt.Sprint(o["extra_resource_limits"]) != "map[nvidia.com/gpu:1]" || o["mem_guarantee"] != "8G" || o["cpu_limit"] != 16.0 {
							return fmt.Errorf("profile_json: %v", d)
						}
						if fmt.Sprint(o["volumes"]) != "[map[name:datasets persistentVolumeClaim:map[claimName:datasets readOnly:true]]]" {
							return fmt.Errorf("volumes: %v", o["volumes"])
						}
						return nil
					},
					func(*terraform.State) error {
						pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "datasets", metav1.GetOptions{})
						if err != nil {
							return fmt.Errorf("the shared claim was not created: %v", err)
						}
						if pvc.Spec.AccessModes[0] != corev1.ReadWriteMany || pvc.Annotations["backup.example.org/enabled"] != "true" {
							return fmt.Errorf("claim: %v %v", pvc.Spec.AccessModes, pvc.Annotations)
						}
						if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "5Gi" {
							return fmt.Errorf("claim size %s", q.String())
						}
						return nil
					},
				),
			},
			{Config: profile("2", ""), PlanOnly: true},
			{
				// 12 cores: more than any node's allocatable (8 at most).
				Config:      profile("12", "require_schedulable = true"),
				ExpectError: wrapRE(`(?s)No node is large enough.*Profile "gpu" guarantees CPU 12.*allocatable CPU 8 < 12.*require_schedulable = false`),
			},
		},
	})
}
