package provider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/tofurun"
)

// actBetween is a "plan check" that acts on the cluster after the plan was
// saved and before OpenTofu applies it: terraform-plugin-testing applies
// the saved plan file, so this is `tofu plan -out p`, something happens,
// `tofu apply p`.
type actBetween func() error

func (a actBetween) CheckPlan(_ context.Context, _ plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	resp.Error = a()
}

// A saved plan shows alice's claim recreated (destructive) and bob's
// created. Before it is applied, bob spawns: KubeSpawner creates claim-bob
// in the hub's old mode, and bob writes to it. The apply must not recreate
// that claim (on_mode_change = "recreate" with allow_data_loss would, and
// change_class and claims read the same as planned): it stops before doing
// anything, and bob's claim is the same object afterwards. The next plan
// shows bob's recreate, by UID, and its apply does it.
func TestAccHomeStorage_savedPlanThenSpawn(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	class := "nfs-" + ns
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  storage_class_name = %q
  access_mode        = "ReadWriteMany"
  capacity           = "1Gi"
  users              = jsonencode({ alice = {}, bob = {} })
  on_mode_change     = "recreate"
  allow_data_loss    = true
}
`, ns, class))
	// alice's home is recreated in the new mode, as the plan shows: the plan
	// is destructive before bob spawns, and stays so after.
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-alice", Username: "alice", StorageClass: &class, Modes: rwo})
	var bob string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectClass("destructive"),
				plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("changes"), knownvalue.StringRegexp(regexp.MustCompile(`"bob":\{"action":"create","namespace":"[^"]+","claim":"claim-bob"\}`))),
				actBetween(func() error {
					acctest.Seed(t, cs, ns, acctest.SeedClaim{Name: "claim-bob", Username: "bob", StorageClass: &class, Modes: rwo})
					bob = uids(t, cs, ns, "claim-bob")["claim-bob"]
					return nil
				}),
			}},
			ExpectError: wrapRE(`(?s)(Provider produced inconsistent final plan.*changes|Claims changed since the plan)`),
		}, {
			PreConfig: func() {
				if got := uids(t, cs, ns, "claim-bob")["claim-bob"]; got != bob || bob == "" {
					t.Fatalf("claim-bob was replaced by the apply of a plan that showed it created: uid %s, then %s", bob, got)
				}
			},
			// The next plan shows bob's claim recreated, destructive; applied,
			// it does exactly that.
			Config: cfg,
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
				expectClass("destructive"),
				plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("changes"), knownvalue.StringRegexp(regexp.MustCompile(`"bob":\{"action":"recreate","namespace":"[^"]+","claim":"claim-bob","uid":"[^"]+"\}`))),
			}},
			Check: func(*terraform.State) error {
				if got := uids(t, cs, ns, "claim-bob")["claim-bob"]; got == bob || got == "" {
					return fmt.Errorf("claim-bob was not recreated by the plan that showed it: uid %s, then %s", bob, got)
				}
				return nil
			},
		}},
	})
}

// runTofu runs the provider as a user does (built, installed by tofu
// init) on a configuration; it returns the combined output and the error.
type tofuDir struct {
	t   *testing.T
	ws  *tofurun.Workspace
	dir string
	out bytes.Buffer
}

func newTofuDir(t *testing.T) *tofuDir {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	work := t.TempDir()
	ws := acctest.Workspace(ctx, t, work)
	d := &tofuDir{t: t, ws: ws, dir: filepath.Join(work, "cfg")}
	ws.Stdout, ws.Stderr = &d.out, &d.out
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *tofuDir) run(cfg string, args ...string) (string, error) {
	d.t.Helper()
	if err := os.WriteFile(filepath.Join(d.dir, "main.tf"), []byte(cfg), 0o600); err != nil {
		d.t.Fatal(err)
	}
	d.out.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err := d.ws.Run(ctx, d.dir, append(args, "-no-color")...)
	return d.out.String(), err
}

func claimUIDs(t *testing.T, cs kubernetes.Interface, ns string, names ...string) map[string]string {
	t.Helper()
	got := uids(t, cs, ns, names...)
	for _, n := range names {
		if got[n] == "" {
			t.Fatalf("claim %s is gone", n)
		}
	}
	return got
}

// `tofu apply -replace` of a deployment whose deletion_policy deletes
// claims on destroy: the replacement's destroy was never planned as a
// destroy, so it deletes nothing (a warning says so) and the new resource
// finds the same claims. A real `tofu destroy` plans the deletion, names
// the claims, and deletes exactly them.
func TestAccHomeStorage_replaceKeepsHomes(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	cfg := acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace       = %q
  capacity        = "1Gi"
  users           = jsonencode({ alice = {}, bob = {} })
  deletion_policy = "delete"
  allow_data_loss = true
}
`, ns))
	d := newTofuDir(t)
	if out, err := d.run(cfg, "init"); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if out, err := d.run(cfg, "apply", "-auto-approve"); err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	before := claimUIDs(t, cs, ns, "claim-alice", "claim-bob")
	out, err := d.run(cfg, "apply", "-auto-approve", "-replace=jupyter_home_storage.homes")
	if err != nil {
		t.Fatalf("apply -replace: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Home claims are kept") {
		t.Errorf("the replacement did not say that it keeps the claims:\n%s", out)
	}
	if after := claimUIDs(t, cs, ns, "claim-alice", "claim-bob"); after["claim-alice"] != before["claim-alice"] || after["claim-bob"] != before["claim-bob"] {
		t.Fatalf("the replacement replaced home claims: %v, then %v\n%s", before, after, out)
	}
	if out, err := d.run(cfg, "plan", "-detailed-exitcode"); err != nil {
		t.Fatalf("plan after the replacement is not empty: %v\n%s", err, out)
	}
	// A destroy shows what it deletes, and deletes it.
	out, err = d.run(cfg, "destroy", "-auto-approve")
	if err != nil || !strings.Contains(out, "Destroying deletes home claims") || !strings.Contains(out, "alice: claim-alice") {
		t.Fatalf("destroy: %v\n%s", err, out)
	}
	if left := uids(t, cs, ns, "claim-alice", "claim-bob"); len(left) != 0 {
		t.Fatalf("claims left after destroy: %v", left)
	}
}

// Turning on user namespaces while the homes live in the hub namespace, or
// moving to another namespace: the homes would be left where the
// configuration no longer looks, and users would get new, empty claims.
// The plan fails naming them.
func TestAccHomeStorage_userNamespacesLeaveHomesBehind(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	base := func(extra string) string {
		return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace = %q
  capacity  = "1Gi"
  users     = jsonencode({ alice = {} })
%s
}
`, ns, extra))
	}
	other := acctest.Namespace(t)
	for _, n := range []string{ns + "-alice"} {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: base("")},
			{
				Config:      base(fmt.Sprintf(`  user_namespace_template = "%s-{username}"`, ns)),
				ExpectError: wrapRE(`(?s)Homes left where the configuration no longer looks.*alice: ` + ns + `/claim-alice`),
			},
			{
				// A new namespace replaces the resource; the homes in the old
				// one would be left behind: the plan fails naming them.
				Config:      strings.Replace(base(""), fmt.Sprintf("namespace = %q", ns), fmt.Sprintf("namespace = %q", other), 1),
				ExpectError: wrapRE(`(?s)Homes left where the configuration no longer looks.*alice: ` + ns + `/claim-alice \(the configuration looks in namespace ` + other + `\)`),
			},
		},
	})
}
