package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
)

// Each kind of invalid input fails before apply (at validate or plan time)
// with an error that shows the offending attribute and says what to write
// instead; no claim and no StorageClass reaches the cluster.
func TestAccHomeStorage_badInputNamesAttributeAndFix(t *testing.T) {
	c := acctest.Cluster(t)
	cs := c.Admin()
	ns := acctest.Namespace(t)
	class := "homes-" + ns
	block := fmt.Sprintf(`
  storage_class = {
    name        = %q
    provisioner = "driver.longhorn.io"
  }`, class)
	cases := []struct {
		name, namespace, args string
		want                  string // after the attribute's source line, in order
	}{
		{"unknown_access_mode", ns, `capacity = "1Gi"` + "\n" + `access_mode = "ReadWriteSometimes"` + block,
			`access_mode = "ReadWriteSometimes".*value must be one of:.*"ReadWriteOnce".*"ReadWriteMany".*"ReadWriteOncePod"`},
		{"rwx_without_class", ns, `capacity = "1Gi"` + "\n" + `access_mode = "ReadWriteMany"`,
			`ReadWriteMany needs a storage class.*Name a class backed by a shared file system with storage_class_name, or create one with storage_class = \{ name = \.\.\., provisioner = \.\.\. \}`},
		{"quantity_GB", ns, `capacity = "10GB"` + block,
			`Invalid quantity.*capacity = "10GB".*Use binary units such as "10Gi"`},
		{"quantity_negative", ns, `capacity = "-1Gi"` + block,
			`Capacity must be positive.*capacity = "-1Gi".*use a size such as "10Gi"`},
		{"quantity_zero", ns, `capacity = "0"` + block,
			`Capacity must be positive.*capacity = "0".*use a size such as "10Gi"`},
		{"template_unknown_field", ns, `capacity = "1Gi"` + "\n" + `pvc_name_template = "claim-{nope}"` + block,
			`Invalid name template.*pvc_name_template = "claim-\{nope\}".*nope.*usable fields: \{username\}`},
		{"template_unbalanced_braces", ns, `capacity = "1Gi"` + "\n" + `pvc_name_template = "claim-{username"` + block,
			`Invalid name template.*pvc_name_template = "claim-\{username".*e\.g\. "claim-\{username\}"`},
		{"namespace_uppercase", "JHub", `capacity = "1Gi"`,
			`namespace = "JHub".*must be a valid namespace name: lowercase letters, digits and '-'.*e\.g\. "jhub"`},
		{"namespace_underscore", "team_a", `capacity = "1Gi"`,
			`namespace = "team_a".*must be a valid namespace name`},
		{"namespace_empty", "", `capacity = "1Gi"`,
			`namespace = "".*string length must be between 1 and 63`},
		{"namespace_too_long", strings.Repeat("a", 64), `capacity = "1Gi"`,
			`namespace = "a{64}".*string length must be between 1 and 63`},
		{"empty_username", ns, `capacity = "1Gi"` + "\n" + `users = jsonencode({ alice = {}, "" = {} })` + block,
			`Invalid users.*users has the username "" \(an empty string\).*users = jsonencode\(\{ for u in var\.users : u => \{\} \}\)`},
		{"duplicate_username", ns, `capacity = "1Gi"` + "\n" + `users = jsonencode({ for u in ["alice", "bob", "alice"] : u => {} })` + block,
			`Duplicate object key.*"alice"`},
		{"duplicate_username_written", ns, `capacity = "1Gi"` + "\n" + `users = "{\"alice\":{},\"alice\":{}}"` + block,
			`Invalid users.*users lists the username "alice" twice; list each user once`},
		{"users_json_array", ns, `capacity = "1Gi"` + "\n" + `users = jsonencode(["alice", "bob"])` + block,
			`Invalid users.*users is a JSON array.*users = jsonencode\(\{ for u in var\.users : u => \{\} \}\)`},
		{"users_per_user_settings", ns, `capacity = "1Gi"` + "\n" + `users = jsonencode({ alice = { capacity = "5Gi" } })` + block,
			`Invalid users.*users maps "alice" to an object with attributes`},
		{"users_as_map", ns, `capacity = "1Gi"` + "\n" + `users = { alice = {}, bob = {} }` + block,
			`Incorrect attribute value type.*users = \{ alice = \{\}, bob = \{\} \}.*string required`},
		{"users_as_list", ns, `capacity = "1Gi"` + "\n" + `users = ["alice", "bob"]` + block,
			`Incorrect attribute value type.*users = \["alice", "bob"\].*string required`},
		{"delete_without_allow_data_loss", ns, `capacity = "1Gi"` + "\n" + `deletion_policy = "delete"` + block,
			`needs allow_data_loss = true.*deletion_policy = "delete".*Set allow_data_loss = true as well if that is intended, or keep deletion_policy = "retain"`},
		{"rwx_on_block_class", ns, `capacity = "1Gi"` + "\n" + `access_mode = "ReadWriteMany"` + `
  storage_class = {
    name        = "ebs-homes"
    provisioner = "ebs.csi.aws.com"
  }`,
			`cannot provide ReadWriteMany.*access_mode = "ReadWriteMany".*provisioner ebs.csi.aws.com.*Use a class backed by a shared file system`},
		// The source line tofu shows for an attribute of migration is the
		// resource's; the messages name the attribute themselves.
		{"rebind_driver_not_a_name", ns, `capacity = "1Gi"` + "\n" + `migration = { rebind_drivers = ["nfs csi"] }` + block,
			`Invalid migration\.rebind_drivers entry.*migration\.rebind_drivers: "nfs csi" is not a CSI driver name.*e\.g\. "nfs\.csi\.k8s\.io"`},
		{"rebind_driver_repeated", ns, `capacity = "1Gi"` + "\n" + `migration = { rebind_drivers = ["nfs.example.org", "x.example.org", "nfs.example.org"] }` + block,
			`Repeated migration\.rebind_drivers entry.*migration\.rebind_drivers: "nfs\.example\.org" is listed more than once \(rebind_drivers\[0\] and rebind_drivers\[2\]\)`},
		{"rebind_drivers_empty", ns, `capacity = "1Gi"` + "\n" + `migration = { rebind_drivers = [] }` + block,
			`Attribute migration\.rebind_drivers list must contain at least 1 elements`},
		{"create_claim_without_capacity", ns, `capacity = "1Gi"` + "\n" + `shared_home = { claim_name = "home-nfs", init_image = "busybox", create_claim = true }` + block,
			`shared_home\.create_claim needs shared_home\.capacity.*give its size, e\.g\. capacity = "500Gi"`},
		{"shared_capacity_without_create_claim", ns, `capacity = "1Gi"` + "\n" + `shared_home = { claim_name = "home-nfs", init_image = "busybox", capacity = "500Gi" }` + block,
			`shared_home\.capacity is used only with create_claim.*never resized.*Set create_claim = true, or remove capacity`},
		{"create_claim_rwx_without_class", ns, `capacity = "1Gi"` + "\n" + `access_mode = "ReadWriteMany"` + "\n" +
			`shared_home = { claim_name = "home-nfs", init_image = "busybox", create_claim = true, capacity = "500Gi" }`,
			`ReadWriteMany needs a storage class.*storage_class_name`},
		{"unknown_on_mode_change", ns, `capacity = "1Gi"` + "\n" + `on_mode_change = "replace"` + block,
			`on_mode_change = "replace".*value must be one of:.*"fail".*"keep_existing".*"recreate"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: protoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  %s
}`, tc.namespace, tc.args)),
					// "pre-apply plan": it failed before anything was applied.
					ExpectError: wrapRE(`(?s)Error running pre-apply plan.*` + tc.want),
				}},
			})
		})
	}
	got, err := cs.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 0 {
		t.Errorf("bad input reached the cluster: %d claims in %s", len(got.Items), ns)
	}
	if _, err := cs.StorageV1().StorageClasses().Get(context.Background(), class, metav1.GetOptions{}); err == nil {
		t.Errorf("bad input reached the cluster: StorageClass %s was created", class)
	}
}

// The users validator refuses what internal/userset cannot read, saying
// why and what to write, and accepts the rest, null and a value not known yet.
func TestUsernamesValidator(t *testing.T) {
	cases := []struct {
		name string
		in   types.String
		want string // the diagnostic's detail contains it; "" for none
	}{
		{"distinct", types.StringValue(`{"alice":{},"bob":{}}`), ""},
		{"null", types.StringNull(), ""},
		{"unknown", types.StringUnknown(), ""},
		{"case matters", types.StringValue(`{"Alice":{},"alice":{}}`), ""},
		{"empty", types.StringValue(`{"alice":{},"":{}}`), `users has the username "" (an empty string)`},
		{"array", types.StringValue(`["alice"]`), "users is a JSON array"},
		{"repeated", types.StringValue(`{"alice":{},"alice":{}}`), `users lists the username "alice" twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkUserMap(t, usersMap, c.in, c.want, "jsonencode({ for u in var.users : u => {} })")
		})
	}
}

// checkUserMap validates in with u: no diagnostic when want is "", else
// one error at u's attribute whose detail contains want and every form.
func checkUserMap(t *testing.T, u userMap, in types.String, want string, forms ...string) {
	t.Helper()
	resp := &validator.StringResponse{}
	u.ValidateString(context.Background(), validator.StringRequest{Path: path.Root(u.attr), ConfigValue: in}, resp)
	if want == "" {
		if len(resp.Diagnostics) != 0 {
			t.Fatalf("got %v, want no diagnostic", resp.Diagnostics)
		}
		return
	}
	if len(resp.Diagnostics) != 1 || resp.Diagnostics[0].Severity() != diag.SeverityError {
		t.Fatalf("got %d diagnostics %v, want 1 error", len(resp.Diagnostics), resp.Diagnostics)
	}
	d := resp.Diagnostics[0]
	if p, ok := d.(diag.DiagnosticWithPath); !ok || !p.Path().Equal(path.Root(u.attr)) {
		t.Errorf("%q is not at %s", d.Summary(), u.attr)
	}
	for _, w := range append([]string{want}, forms...) {
		if !strings.Contains(d.Detail(), w) {
			t.Errorf("%q does not contain %q", d.Detail(), w)
		}
	}
}

// The rebind_drivers validator takes CSI driver names (as a volume's
// spec.csi.driver gives them) and names the attribute for anything else.
func TestCSIDriverNameValidator(t *testing.T) {
	for name, ok := range map[string]bool{
		"nfs.csi.k8s.io": true, "rook-ceph.cephfs.csi.ceph.com": true, "hostpath.testbed.invalid": true, "Driver.Example.com": true, "a": true,
		strings.Repeat("a", 63): true, strings.Repeat("a", 64): false,
		"": false, "nfs csi": false, "-nfs.example.org": false, "nfs.example.org.": false, "nfs/csi": false, "nfs_csi.example.org": false,
	} {
		resp := &validator.StringResponse{}
		csiDriverNameValidator{}.ValidateString(context.Background(), validator.StringRequest{
			Path: path.Root("migration").AtName("rebind_drivers").AtListIndex(0), ConfigValue: types.StringValue(name)}, resp)
		switch {
		case ok && resp.Diagnostics.HasError():
			t.Errorf("%q refused: %v", name, resp.Diagnostics)
		case !ok && (!resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics[0].Detail(), "migration.rebind_drivers: ")):
			t.Errorf("%q accepted or not named: %v", name, resp.Diagnostics)
		}
	}
}

// migration.rebind_drivers with method = "copy" is reported as unused (a
// warning naming the attribute); with auto or rebind it is not.
func TestRebindDriversUnusedWithCopy(t *testing.T) {
	drivers := types.ListValueMust(types.StringType, []attr.Value{types.StringValue("nfs.example.org")})
	for method, warned := range map[string]bool{"copy": true, "auto": false, "rebind": false, "": false} {
		m := &homeStorageModel{OnModeChange: types.StringValue("migrate"), AllowDataLoss: types.BoolValue(false), DeletionPolicy: types.StringValue("retain"),
			Migration: &migrationModel{Method: types.StringValue(method), RebindDrivers: drivers}}
		if method == "" {
			m.Migration.Method = types.StringNull()
		}
		var diags diag.Diagnostics
		validateDataLoss(m, &diags)
		got := false
		for _, d := range diags.Warnings() {
			got = got || strings.Contains(d.Summary(), "migration.rebind_drivers is not used")
		}
		if got != warned || diags.HasError() {
			t.Errorf("method %q: warned %v, want %v: %v", method, got, warned, diags)
		}
	}
}

// A users value that does not parse, in the configuration or in the state,
// is an error at users wherever the model is read (plan, apply, destroy
// plan), and lists no user: nothing is decided from a partial reading.
func TestUsersThatDoNotParseAreAnError(t *testing.T) {
	m := &homeStorageModel{Users: types.StringValue(`["alice"]`), PVCNameTemplate: types.StringValue("claim-{username}"), SlugScheme: types.StringValue("safe")}
	var diags diag.Diagnostics
	if cfg := m.config(context.Background(), &diags); len(cfg.Users) != 0 || !diags.HasError() {
		t.Fatalf("config: users %v, diagnostics %v; want none and an error", cfg.Users, diags)
	}
	diags = nil
	if p := m.prior(context.Background(), &diags); len(p.Managed) != 0 || !diags.HasError() {
		t.Fatalf("prior: managed %v, diagnostics %v; want none and an error", p.Managed, diags)
	}
	d, ok := diags.Errors()[0].(diag.DiagnosticWithPath)
	if !ok || !d.Path().Equal(path.Root("users")) || !strings.Contains(d.Detail(), "users is a JSON array") {
		t.Fatalf("the error %v is not at users or does not say why", diags.Errors()[0])
	}
}
