package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// guideDir holds the guide's examples (templates/guides, embedded with
// tffile), read in place.
const guideDir = "../../examples/guides/moving-out-of-shared-homes"

// guideConfig is the guide's example files, joined, with the guide's
// namespace (ns from) replaced by the test's and the provider block of
// the test bed; edits are further replacements (old, new pairs).
func guideConfig(t *testing.T, from, ns string, files []string, edits ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		src, err := os.ReadFile(filepath.Join(guideDir, f))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	s := b.String()
	if strings.Count(s, `"`+from+`"`) == 0 {
		t.Fatalf("%v: no namespace %q", files, from)
	}
	s = strings.ReplaceAll(s, `"`+from+`"`, `"`+ns+`"`)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(s, edits[i]) {
			t.Fatalf("%v: no %q to edit", files, edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return acctest.AdminConfig(t, s)
}

// nfsSharedClaim makes claim name in ns, bound to a static NFS volume (as
// a z2jh static or Nebari classic deployment has it): the plan moves its
// directories zero copy.
func nfsSharedClaim(t *testing.T, ns, name string) {
	staticSharedClaim(t, ns, name, "nfs-"+ns, corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.org", Path: "/export/homes"}})
}

// staticSharedClaim makes claim name in ns, bound to volume pvName of
// source (ReadWriteMany, Retain, no class), as a static shared claim is.
func staticSharedClaim(t *testing.T, ns, name, pvName string, source corev1.PersistentVolumeSource) {
	t.Helper()
	cs := acctest.Cluster(t).Admin()
	ctx := context.Background()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("100Gi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        source,
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name}}}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	none := ""
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: &none, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("100Gi")}}}}
	created, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.Phase != corev1.ClaimBound { // the binder may have been first
		created.Status.Phase = corev1.ClaimBound
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// splitPlanned checks that migration_plan moves each of users zero copy.
func splitPlanned(users ...string) func(string) error {
	return func(s string) error {
		var plan map[string]map[string]string
		if err := json.Unmarshal([]byte(s), &plan); err != nil {
			return err
		}
		for _, u := range users {
			if plan[u]["method"] != string(migration.MethodSplit) {
				return fmt.Errorf("%s: %v", u, plan)
			}
		}
		return nil
	}
}

// The guide "Moving homes out of a shared claim", through OpenTofu, its
// examples as written (namespace aside), as far as the API server goes
// (internal/nodeacc moves homes on a real node): zero-to-jupyterhub's
// static layout is described and applied; the data source finds both
// users in their directories; the move plans each user zero copy on the
// NFS volume; the finish fails without on_layout_change = "keep", as the
// guide says; the merge back plans the hub of the merge. Nebari classic's layout is described and applied alike, and
// its move plans the same.
func TestAccGuide_movingOutOfSharedHomes(t *testing.T) {
	ns := acctest.Namespace(t)
	nfsSharedClaim(t, ns, "home-nfs")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: guideConfig(t, "jhub", ns, []string{"1-describe.tf"}),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(hsAddr, plancheck.ResourceActionCreate), expectClass("none"),
				}},
			},
			{
				Config: guideConfig(t, "jhub", ns, []string{"1-describe.tf", "2-homes.tf"}, `layout            = "per_user"`, `layout            = "shared"`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("still_in_directories", knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("alice"), knownvalue.StringExact("bob")})),
				},
			},
			{
				Config: guideConfig(t, "jhub", ns, []string{"2-move.tf", "2-homes.tf"}),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(splitPlanned("alice", "bob"))),
				}},
				PlanOnly: true, ExpectNonEmptyPlan: true,
			},
			{
				Config:      guideConfig(t, "jhub", ns, []string{"3-finish.tf"}, `  on_layout_change   = "keep"`+"\n", ""),
				ExpectError: regexp.MustCompile(`on_layout_change`),
			},
			{
				// The merge back plans, its hub first (no claim here to copy).
				Config: guideConfig(t, "jhub", ns, []string{"4-merge.tf"}),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("spawner_settings"), knownvalue.StringRegexp(regexp.MustCompile(`"storage_pvc_ensure":false`))),
				}},
				PlanOnly: true, ExpectNonEmptyPlan: true,
			},
		},
	})

	nebari := acctest.Namespace(t)
	nfsSharedClaim(t, nebari, "jupyterhub-dev-share")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: guideConfig(t, "dev", nebari, []string{"1-describe-nebari.tf"})},
			{
				Config: guideConfig(t, "dev", nebari, []string{"1-describe-nebari.tf"}, "  shared_home = {", "  layout           = \"per_user\"\n  on_layout_change = \"migrate\"\n  shared_home = {"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(splitPlanned("alice", "bob"))),
				}},
				PlanOnly: true, ExpectNonEmptyPlan: true,
			},
		},
	})
}
