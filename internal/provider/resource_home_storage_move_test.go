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
	kresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/jupyter-infra/terraform-provider-jupyter/internal/acctest"
	"github.com/jupyter-infra/terraform-provider-jupyter/internal/migration"
)

// movingConfig is the per-user layout moving out of the shared layout of
// sharedHomeConfig, plus extra arguments.
func movingConfig(t *testing.T, ns, extra string) string {
	return sharedHomeConfig(t, ns, `  layout = "per_user"
`+extra)
}

// Moving out of the shared layout through OpenTofu, as far as plans go (no
// node runs here; internal/nodeacc moves homes on a real node): the plan
// fails naming the listed users whose home is still a directory unless
// on_layout_change = "migrate", which plans each user's move (method
// split, zero copy) and never a new claim; layout = "shared" without
// shared_home fails validation; a move an earlier apply left unfinished (its claim not
// yet bound) fails the plan once on_layout_change no longer says migrate,
// saying how to finish or undo it, and is resumed with it.
func TestAccHomeStorage_moveOutOfSharedLayoutPlans(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "home-nfs", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("10Gi")}}}}
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unfinished := func() {
		rec := migration.SplitRecord{User: "alice", Namespace: ns, Claim: "claim-alice", Shared: "home-nfs", SharedUID: "x", Directory: "alice",
			Volume: migration.SplitVolumeName(ns, "claim-alice")}
		none := ""
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-alice", Namespace: ns,
			Labels:      map[string]string{"hub.jupyter.org/username": "alice", "component": "singleuser-storage", "app": "jupyterhub"},
			Annotations: map[string]string{"hub.jupyter.org/username": "alice", migration.SplitAnnotation: rec.Encode()}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: &none,
				VolumeName: rec.Volume, Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: kresource.MustParse("1Gi")}}}}
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	planned := func(s string) error {
		var plan map[string]map[string]string
		if err := json.Unmarshal([]byte(s), &plan); err != nil {
			return err
		}
		for _, u := range []string{"alice", "Bob"} {
			if plan[u]["method"] != "split" {
				return fmt.Errorf("%s: %v", u, plan)
			}
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: sharedHomeConfig(t, ns, "")},
			{
				Config:      movingConfig(t, ns, ""),
				ExpectError: wrapRE(`(?s)Listed users' homes are directories of the shared claim.*Bob: .*alice: claim-alice \(directory "alice" of claim ` + ns + `/home-nfs\)`),
			},
			{
				Config: movingConfig(t, ns, `  on_layout_change = "migrate"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{
					expectClass("safe"),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(planned)),
					plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("changes"), knownvalue.StringRegexp(regexp.MustCompile(`"action":"migrate".*"method":"split"`))),
				}},
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				PreConfig:   unfinished,
				Config:      movingConfig(t, ns, `  on_layout_change = "keep"`),
				ExpectError: wrapRE(`(?s)A move out of the shared layout has not finished.*claim ` + ns + `/claim-alice`),
			},
			{
				Config:   sharedHomeConfig(t, ns, `  on_layout_change = "keep"`),
				PlanOnly: true, ExpectNonEmptyPlan: true,
			},
		},
	})
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "home-nfs", metav1.GetOptions{}); err != nil {
		t.Fatalf("the shared claim: %v", err)
	}
}

// layout = "shared" needs shared_home; the plan says so at validation.
func TestAccHomeStorage_sharedLayoutNeedsSharedHome(t *testing.T) {
	ns := acctest.Namespace(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: homeStorageConfig(t, ns, "longhorn", `  capacity = "1Gi"
  layout = "shared"`),
			ExpectError: regexp.MustCompile(`layout = "shared" needs shared_home`),
		}},
	})
}

// Moving out of a shared claim whose volume cannot serve a directory as a
// volume of its own (a Longhorn volume here): the plan reads the volume and
// moves each directory by a copy, which needs migration.copy_image (the
// plan fails naming the users without it), and never plans a split. The
// copies start in the apply after the one that switched to the move's
// layout: until then the hub does not refuse spawns on a claim being
// copied.
func TestAccHomeStorage_moveOutOfSharedLayoutByCopyPlans(t *testing.T) {
	cs := acctest.Cluster(t).Admin()
	ns := acctest.Namespace(t)
	ctx := context.Background()
	staticSharedClaim(t, ns, "home-nfs", "lh-"+ns, corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "driver.longhorn.io", VolumeHandle: "lh-" + ns}})
	later := func(s string) error { // left for the apply after the hub's switch
		var plan map[string]map[string]string
		if err := json.Unmarshal([]byte(s), &plan); err != nil {
			return err
		}
		for _, u := range []string{"alice", "Bob"} {
			if plan[u]["method"] != "none" || !strings.Contains(plan[u]["reason"], "copied by a later apply") {
				return fmt.Errorf("%s: %v", u, plan)
			}
		}
		return nil
	}
	copied := func(s string) error {
		var plan map[string]map[string]string
		if err := json.Unmarshal([]byte(s), &plan); err != nil {
			return err
		}
		for _, u := range []string{"alice", "Bob"} {
			if plan[u]["method"] != string(migration.MethodDirectoryCopy) {
				return fmt.Errorf("%s: %v", u, plan)
			}
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: sharedHomeConfig(t, ns, "")},
			{
				Config:      movingConfig(t, ns, `  on_layout_change = "migrate"`),
				ExpectError: wrapRE(`(?s)Homes in directories need a copy image.*Bob: .*alice: `),
			},
			{
				// The first apply gives the hub the move's settings and copies
				// no one (a copy needs a hub that refuses the user meanwhile);
				// the plan after it copies.
				Config: movingConfig(t, ns, `  on_layout_change = "migrate"
  migration = { copy_image = "registry.example.org/tools/rsync:3" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(later)),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{
						expectClass("safe"),
						plancheck.ExpectKnownValue(hsAddr, tfjsonpath.New("migration_plan"), knownvalue.StringFunc(copied)),
					},
				},
				Check: func(*terraform.State) error {
					for _, name := range []string{"claim-alice", "claim-bob"} {
						if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
							return fmt.Errorf("claim %s was made by the apply that switches the hub", name)
						}
					}
					return nil
				},
				ExpectNonEmptyPlan: true,
			},
		},
	})
}
