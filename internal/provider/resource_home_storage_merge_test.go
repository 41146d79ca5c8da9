package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/kubespawner"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// mergeConfig is the per-user layout of alice and Bob (layout "" ) or,
// with layout = "shared", their homes on claim home-nfs, plus extra
// arguments.
func mergeConfig(t *testing.T, ns, layout, extra string) string {
	shared := ""
	if layout != "" {
		shared = `  layout      = "` + layout + `"
  shared_home = {
    claim_name = "home-nfs"
    init_image = "busybox:1.36"
  }
`
	}
	return acctest.AdminConfig(t, fmt.Sprintf(`
resource "jupyter_home_storage" "homes" {
  namespace          = %q
  access_mode        = "ReadWriteMany"
  storage_class_name = "nfs-homes"
  capacity           = "1Gi"
  users              = jsonencode({ alice = {}, "Bob" = {} })
%s%s
}
`, ns, shared, extra))
}

// migrationPlanSays checks migration_plan: each user's method and, when
// set, a word of the reason.
func migrationPlanSays(want map[string][2]string) func(string) error {
	return func(s string) error {
		var plan map[string]map[string]string
		if err := json.Unmarshal([]byte(s), &plan); err != nil {
			return err
		}
		if len(plan) != len(want) {
			return fmt.Errorf("%v, want %v", plan, want)
		}
		for u, w := range want {
			if plan[u]["method"] != w[0] || !strings.Contains(plan[u]["reason"], w[1]) {
				return fmt.Errorf("%s: %v, want %v", u, plan[u], w)
			}
		}
		return nil
	}
}

// Consolidation through OpenTofu, as far as plans and records go (no node
// runs here; internal/nodeacc copies homes on a real node): from the
// per-user layout, layout = "shared" with on_layout_change = "migrate"
// needs a copy image; its first apply gives the hub the merge's settings
// (the fallback: claims where they exist, the directory elsewhere; no
// claim created by KubeSpawner) and copies no one, and the plan after it
// merges each listed user; the plain shared layout would drop the claims
// not merged (fails); a merged claim is kept and an unfinished one
// resumes, and the per-user layout fails over both; migrate without
// shared_home fails validation.
func TestAccHomeStorage_mergeIntoSharedLayoutPlans(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	ctx := context.Background()
	staticSharedClaim(t, ns, "home-nfs", "nfs-"+ns, corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.org", Path: "/homes"}})
	merge := mergeConfig(t, ns, "shared", `  on_layout_change = "migrate"
  migration = { copy_image = "registry.example.org/tools/rsync:3" }`)
	expand := func(tmpl, user string) string {
		v, err := kubespawner.Expand(tmpl, user, "", kubespawner.SchemeSafe)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	bobClaim := expand("claim-{username}", "Bob")
	mark := func() {
		for user, marked := range map[string]bool{"alice": true, "Bob": false} {
			pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, expand("claim-{username}", user), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec := migration.MergeRecord{User: user, Namespace: ns, Claim: pvc.Name, ClaimUID: string(pvc.UID), Shared: "home-nfs",
				SharedUID: sharedUID(t, ns), Directory: expand("{username}", user)}
			pvc.Annotations[migration.MergeAnnotation] = rec.Encode()
			if marked {
				pvc.Annotations[migration.MergedAnnotation] = string(pvc.UID)
			}
			if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: mergeConfig(t, ns, "", "")},
			{
				Config:      mergeConfig(t, ns, "", `  on_layout_change = "migrate"`),
				ExpectError: regexp.MustCompile(`on_layout_change = "migrate" moves homes between claims of their own and the shared claim`),
			},
			{
				Config:      mergeConfig(t, ns, "shared", `  on_layout_change = "migrate"`),
				ExpectError: wrapRE(`(?s)Merging homes needs a copy image.*Bob: .*alice: `),
			},
			{
				Config: merge,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						expectClass("safe"),
						plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(migrationPlanSays(map[string][2]string{
							"alice": {"none", "once the hub has the merge's settings"}, "Bob": {"none", "once the hub has the merge's settings"}}))),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(migrationPlanSays(map[string][2]string{
							"alice": {"merge", ""}, "Bob": {"merge", ""}}))),
						plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("changes"), knownvalue.StringRegexp(regexp.MustCompile(`"action":"migrate".*"method":"merge"`))),
					},
				},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttrWith(hsAddr, "spawner_settings", func(v string) error {
						if !strings.Contains(v, `"storage_pvc_ensure":false`) || !strings.Contains(v, `"claim":"home-nfs"`) || !strings.Contains(v, `"pvc_name_template":"claim-{username}"`) {
							return fmt.Errorf("not the hub of a merge (claims where they exist, else the directory; KubeSpawner creates none): %s", v)
						}
						return nil
					}),
					func(*terraform.State) error {
						for _, name := range []string{"claim-alice", bobClaim} {
							pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
							if err != nil || pvc.Annotations[migration.MergeAnnotation] != "" {
								return fmt.Errorf("claim %s was touched by the apply that switches the hub: %v %v", name, err, pvc.Annotations)
							}
						}
						return nil
					}),
				ExpectNonEmptyPlan: true,
			},
			{
				Config:      mergeConfig(t, ns, "shared", ""),
				PlanOnly:    true,
				ExpectError: wrapRE(`(?s)alice: claim ` + ns + `/claim-alice → directory "alice" of claim ` + ns + `/home-nfs \(a claim no move made`),
			},
			{
				PreConfig: mark,
				Config:    merge,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(migrationPlanSays(map[string][2]string{"Bob": {"merge", ""}}))),
				}},
				PlanOnly: true, ExpectNonEmptyPlan: true,
			},
			{
				Config:      mergeConfig(t, ns, "", ""),
				PlanOnly:    true,
				ExpectError: wrapRE(`(?s)(Merged homes are directories of the shared claim.*alice.*A merge into the shared layout has not finished.*` + bobClaim + `|A merge into the shared layout has not finished.*` + bobClaim + `.*Merged homes are directories of the shared claim.*alice)`),
			},
		},
	})
}

// sharedUID is the UID of claim home-nfs in ns.
func sharedUID(t *testing.T, ns string) string {
	pvc, err := acctest.Cluster(t).Admin().CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), "home-nfs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(pvc.UID)
}
