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

	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	corev1 "k8s.io/api/core/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/testcluster"
)

// quickstartPlans runs `tofu plan` on examples/quickstart as written, with
// the test bed's provider block, in a fresh namespace holding the demo's
// claims (alice and bob ReadWriteOnce, carol ReadWriteMany), once for each
// set of -var arguments, and returns what OpenTofu printed each time.
func quickstartPlans(t *testing.T, vars ...[]string) []string {
	t.Helper()
	c := acctest.Cluster(t)
	ns := acctest.Namespace(t)
	ctx := context.Background()
	class := "jupyter-homes"
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	acctest.Seed(t, c.Admin(), ns,
		testcluster.SeedClaim{Name: "claim-alice", Username: "alice", Size: "10Gi", StorageClass: &class},
		testcluster.SeedClaim{Name: "claim-bob", Username: "bob", Size: "10Gi", StorageClass: &class},
		testcluster.SeedClaim{Name: "claim-carol", Username: "carol", Size: "10Gi", Modes: rwx, StorageClass: &class})
	root := acctest.RepoRoot(t)
	work := t.TempDir()
	ws := acctest.Workspace(ctx, t, work)
	var out bytes.Buffer
	ws.Stdout, ws.Stderr = &out, &out
	main, err := os.ReadFile(filepath.Join(root, "examples", "quickstart", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(main), `provider "jupyter" {}`, acctest.ProviderBlock(c, c.AdminToken), 1)
	if cfg == string(main) {
		t.Fatal(`examples/quickstart/main.tf has no provider "jupyter" {} block`)
	}
	dir := filepath.Join(work, "quickstart")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ws.Run(ctx, dir, "init", "-no-color"); err != nil {
		t.Fatalf("tofu init: %v\n%s", err, out.String())
	}
	var plans []string
	for _, v := range vars {
		out.Reset()
		if err := ws.Run(ctx, dir, append([]string{"plan", "-no-color", "-var", "namespace=" + ns}, v...)...); err != nil {
			t.Fatalf("tofu plan %v: %v\n%s", v, err, out.String())
		}
		plans = append(plans, out.String())
	}
	return plans
}

// quickstartPlanLines bounds the quickstart's first plan: a few screens.
// With the hub's file and Helm values as attributes it was 943 lines.
const quickstartPlanLines = 250

// The first plan of the README's quick start is short and shows what a
// reviewer decides on: every user whose claim changes (dave's is created,
// by name), every claim read, the hub's settings, its co-location and the
// checksum that restarts it; not the hub's Python file nor Helm values (no
// line of generated text: none is longer than a wide terminal). The same
// plan flipped to ReadWriteMany under keep_existing names each legacy
// user in the spawner config's plan, the users whose pods stay co-located.
func TestAccSpawnerConfig_quickstartPlan(t *testing.T) {
	plans := quickstartPlans(t, nil, []string{"-var", "access_mode=ReadWriteMany", "-var", "on_mode_change=keep_existing"})
	first, flip := plans[0], plans[1]
	lines := strings.Split(first, "\n")
	t.Logf("the quickstart's first plan: %d lines", len(lines))
	if len(lines) > quickstartPlanLines {
		t.Errorf("the quickstart's first plan has %d lines, more than %d:\n%s", len(lines), quickstartPlanLines, first)
	}
	for _, l := range lines {
		if len(l) > 200 {
			t.Errorf("the plan has a line of %d characters: %.120s...", len(l), l)
		}
	}
	config := planOf(t, first, configAddr)
	for what, re := range map[string]string{
		"dave's claim created":       `(?s)changes\s+= jsonencode\(.*\+ dave = \{[^}]*\+ action\s+= "create"[^}]*\+ claim\s+= "claim-dave"`,
		"every claim read":           `(?s)\+ alice = \{\s+\+ name = "claim-alice".*\+ bob   = \{\s+\+ name = "claim-bob".*\+ name        = "claim-carol"`,
		"the hub's checksum":         `\+ hub_checksum\s+= "[0-9a-f]{64}"`,
		"the hub's co-location":      `\+ colocation_mode\s+= "all"`,
		"the hub's settings, by key": `(?s)\+ kubespawner_json\s+= jsonencode\(.*\+ storage_access_modes = \[\s+\+ "ReadWriteOnce"`,
	} {
		in := first
		if what != "dave's claim created" && what != "every claim read" {
			in = config
		}
		if !regexp.MustCompile(re).MatchString(in) {
			t.Errorf("the first plan does not show %s (%s):\n%s", what, re, in)
		}
	}
	for _, generated := range []string{"jupyterhub_config_py", "helm_values", "def _jupyter_spawner_config", "extraFiles"} {
		if strings.Contains(first, generated) {
			t.Errorf("the first plan prints %q", generated)
		}
	}
	// After the flip to ReadWriteMany under keep_existing, the hub's
	// configuration names no user: the hub pins alice and bob at their
	// spawns from their ReadWriteOnce claims.
	flipConfig := planOf(t, flip, configAddr)
	if end := strings.Index(flipConfig, "\n    }\n"); end > 0 {
		flipConfig = flipConfig[:end] // the resource alone
	}
	if !regexp.MustCompile(`\+ colocation_mode\s+= "by_claim"`).MatchString(flipConfig) || strings.Contains(flipConfig, "alice") || strings.Contains(flipConfig, "legacy_users") {
		t.Errorf("the flipped plan of the spawner config is not by claim, or names a user:\n%s", flipConfig)
	}
}

// planOf is the part of a printed plan from addr's creation on.
func planOf(t *testing.T, plan, addr string) string {
	t.Helper()
	i := strings.Index(plan, "# "+addr+" will be created")
	if i < 0 {
		t.Fatalf("the plan does not create %s:\n%s", addr, plan)
	}
	return plan[i:]
}

type changedAttribute struct{ addr, name string }

// expectChanged checks that the plan changes an attribute of addr: its
// value before (the refreshed state) differs from the planned one.
func expectChanged(addr, name string) plancheck.PlanCheck { return changedAttribute{addr, name} }

func (c changedAttribute) CheckPlan(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	for _, rc := range req.Plan.ResourceChanges {
		if rc.Address != c.addr {
			continue
		}
		before, _ := rc.Change.Before.(map[string]any)
		after, _ := rc.Change.After.(map[string]any)
		if before[c.name] == nil || after[c.name] == nil || before[c.name] == after[c.name] {
			resp.Error = fmt.Errorf("%s.%s: %v -> %v, want a change between known values", c.addr, c.name, before[c.name], after[c.name])
		}
		return
	}
	resp.Error = fmt.Errorf("no planned change for %s", c.addr)
}
